import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { ABILITIES, type Ability } from '#lib/http/route';
import { HttpError, toHttpError } from '#lib/http/errors';
import { NotFoundError } from '#lib/errors';
import { isCurrency } from '#lib/shared/currency';
import { canonicalZone } from '#lib/shared/zone';
import { BACKOFFICE_ROLES, CLAIMS, readClaims, type BackofficeRole } from '#lib/auth/backoffice';
import { awsCredentialsConfigured, LOCAL_STACK_FILE_LABEL, readLocalStackFile } from '../local/stack-file.ts';

/** Loaded only for a well-formed command: usage errors and --help answer at once, without the AWS SDK. */
const store = async () => ({
  ...(await import('#lib/merchants/store')),
  ...(await import('#lib/merchants/rules')),
  ...(await import('#lib/merchants/service')),
  ...(await import('#lib/settings/service')),
});

/**
 * Operator tooling: `npm run ops -- <resource> <action> [options]`, on commander (every command has
 * --help; docs/ops-cli.md is the reference). Talks to the DynamoDB named by DYNAMODB_ENDPOINT
 * (local) or the default AWS credentials chain, and the table TABLE_NAME. A result is printed as
 * JSON on stdout; a usage error exits 2 with the command's help on stderr, any other error exits 1
 * (a service error as JSON `{error, status}` on stderr).
 */
class UsageError extends Error {}

/** The options of a command as commander parses them (camelCase keys: `--per-page` → `perPage`). */
type Values = Record<string, string | string[] | boolean | undefined>;
type Run = (values: Values) => Promise<unknown>;

const camel = (flag: string) => flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
const str = (values: Values, flag: string) => values[camel(flag)] as string | undefined;

const need = (v: string | undefined, flag: string): string => {
  if (!v) throw new UsageError(`--${flag} is required`);
  return v;
};

const notFound = (merchantId: string) => new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });

const requireExistingMerchant = async (merchantId: string) => {
  if (!(await (await store()).getMerchant(merchantId))) throw notFound(merchantId);
};

/** A merchant deleted or not (`show` commands report deleted merchants too); 404 when it never existed. */
const requireMerchantRecord = async (merchantId: string) => {
  const record = await (await store()).getMerchantRecord(merchantId);
  if (!record) throw notFound(merchantId);
  return record;
};

const currencyOption = (raw: string | undefined): string | undefined => {
  if (raw !== undefined && !isCurrency(raw)) throw new UsageError(`--currency must be an ISO 4217 code, got ${raw}`);
  return raw;
};

/** `merchant list`: the merchant directory, `--limit` merchants at most; `meta.more` when some were left out. */
const listMerchants = async (values: Values) => {
  const limit = str(values, 'limit') === undefined ? Infinity : nonNegativeInt(str(values, 'limit'), 'limit', 0);
  if (limit < 1) throw new UsageError(`--limit must be at least 1, got ${str(values, 'limit')}`);
  const { merchantPages, presentMerchantRecord } = await store();
  const data: ReturnType<typeof presentMerchantRecord>[] = [];
  let more = false;
  for await (const page of merchantPages(Math.min(limit + 1, 100))) {
    for (const m of page) {
      if (data.length === limit) more = true;
      else data.push(presentMerchantRecord(m));
    }
    if (more) break;
  }
  return { data, meta: { count: data.length, more } };
};

/** `merchant show`: the merchant (deleted or not) and its token's status, never the token. */
const showMerchant = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  const merchant = await requireMerchantRecord(merchantId);
  const { presentMerchantRecord, tokenStatus } = await store();
  return { ...presentMerchantRecord(merchant), token: await tokenStatus(merchantId) };
};

/** `merchant update`: what an operator may change (the name, the reporting time zone); the reporting currency is refused with the reason. */
const updateMerchant = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  if (str(values, 'currency') !== undefined) {
    throw new UsageError(
      '--currency cannot be changed: metrics, customer ltv and stats are recorded in the reporting currency as data is written (create a merchant for another currency)',
    );
  }
  const name = str(values, 'name');
  const zone = str(values, 'timezone');
  const days = str(values, 'delinquencyDays');
  if (name === undefined && zone === undefined && days === undefined)
    throw new UsageError('nothing to update: give --name, --timezone or --delinquency-days');
  if (days !== undefined && !/^(?:[1-9]|[1-8][0-9]|90)$/.test(days))
    throw new UsageError(`--delinquency-days must be a whole number of days from 1 to 90, got ${days}`);
  let timezone: string | undefined;
  if (zone !== undefined) {
    timezone = canonicalZone(zone) ?? undefined;
    if (timezone === undefined)
      throw new UsageError(`--timezone must be an IANA time zone name, such as UTC, Asia/Taipei or America/New_York, got ${zone}`);
  }
  const changes = {
    ...(name === undefined ? {} : { name: need(name, 'name') }),
    ...(timezone ? { timezone } : {}),
    ...(days === undefined ? {} : { delinquency_days: Number(days) }),
  };
  // A new time zone: stored now; the figures follow it once its recount (the worker's) switches.
  const { changeMerchant, presentRecount, zoneOf, delinquencyDaysOf } = await store();
  const m = await explainNotFound(merchantId, changeMerchant(merchantId, changes));
  const shown = {
    merchant_id: m.merchant_id,
    name: m.name,
    reporting_currency: m.reporting_currency,
    timezone: zoneOf(m),
    delinquency_days: delinquencyDaysOf(m),
    created_at: m.created_at,
  };
  // A zone change is stored at once; the figures follow once its recount switches (the worker's).
  return timezone ? { ...shown, recount: presentRecount(m) } : shown;
};

/** `token show`: the token's status, abilities and use, never the token or its hash. */
const showToken = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  await requireMerchantRecord(merchantId);
  return { merchant_id: merchantId, ...(await (await store()).tokenStatus(merchantId)) };
};

/** A store operation on `--merchant`, its 404 explained (merchant or token missing). */
const onMerchant =
  (op: (s: Awaited<ReturnType<typeof store>>, merchantId: string) => Promise<unknown>): Run =>
  async (values) => {
    const merchantId = need(str(values, 'merchant'), 'merchant');
    return explainNotFound(merchantId, op(await store(), merchantId));
  };

const merchantFlag = () => new Option('--merchant <id>', 'the merchant id, mer_… (required)');
const roleFlag = () => new Option('--role <role>', 'admin or user (required)');

/** An option with a default commander fills in (shown in --help as `(default: …)`). */
const withDefault = (flags: string, description: string, value: string) => new Option(flags, description).default(value, value);

/**
 * The command tree. `run` is each command's work; `done` receives its result. Resources with
 * actions (`merchant`, `token`, …) answer a missing or unknown action themselves, naming theirs.
 */
const buildProgram = (done: (result: unknown) => void): Command => {
  const program = new Command('ops')
    .description(
      'Operator tooling of the revenue analytics API: merchants, tokens, back-office users, maintenance and imports.\n\n' +
        'Talks to the table TABLE_NAME at DYNAMODB_ENDPOINT (local), or on AWS through the default credentials chain; with ' +
        'neither, to the local stack a running `npm start` recorded. Prints the result as JSON on stdout; a usage error exits 2, ' +
        'any other error exits 1 (a service error as JSON {error, status} on stderr).',
    )
    .usage('<resource> <action> [options]')
    // `usage:`, `options:`, `commands:`, as the usage errors have always said.
    .configureHelp({ styleTitle: (title) => title.toLowerCase() })
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      'after',
      "\nRun 'ops <resource> --help' for its actions and 'ops <resource> <action> --help' for their options;\ndocs/ops-cli.md describes them all.",
    );

  /** `ops <name>` with actions of its own. */
  const resource = (name: string, summary: string) =>
    program.command(name).summary(summary).description(summary).usage('<action> [options]');

  /** A command that runs: `run` gets its options; a usage error shows its help. */
  const command = (parent: Command, name: string, description: string, run: Run) =>
    parent
      .command(name)
      .description(description)
      .allowExcessArguments(false)
      .action(async (values: Values, cmd: Command) => {
        try {
          done(await run(values));
        } catch (err) {
          if (err instanceof UsageError) cmd.error(`error: ${err.message}`, { exitCode: 2, code: 'ops.usage' });
          throw err;
        }
      });

  const merchant = resource('merchant', 'Merchants: create, list, show, update, delete; directory.');
  command(merchant, 'create', 'Create a merchant; prints it with its merchant_id.', async (values) => {
    const currency = currencyOption(str(values, 'currency'));
    return (await store()).createMerchant(need(str(values, 'name'), 'name'), currency);
  })
    .option('--name <name>', "the merchant's name (required)")
    .option(
      '--currency <code>',
      'reporting currency, an ISO 4217 code: the currency of its metrics and stats, fixed once created (default: $REPORTING_CURRENCY, else TWD)',
    );
  command(
    merchant,
    'list',
    'List the merchants of the merchant directory, deleted ones too, in merchant id order: {data, meta: {count, more}}.',
    listMerchants,
  ).option('--limit <n>', 'at most n merchants; meta.more is true when some were left out (default: all)');
  command(
    merchant,
    'show',
    "Show a merchant (deleted or not) and its token's status, abilities, created and last used times (never the token).",
    showMerchant,
  ).addOption(merchantFlag());
  command(
    merchant,
    'update',
    "Change a merchant's name, reporting time zone or delinquency days (the reporting currency is fixed at creation); prints the merchant.",
    updateMerchant,
  )
    .addOption(merchantFlag())
    .option('--name <name>', 'the new name')
    .option('--timezone <zone>', 'the reporting time zone, an IANA name (UTC, Asia/Taipei…): stats start today and this month in it')
    .option('--delinquency-days <days>', 'days (1–90) a subscription may stay past due before it is cancelled as delinquent')
    .addOption(new Option('--currency <code>').hideHelp());
  command(
    merchant,
    'delete',
    'Delete a merchant: its token is refused from the next request; its data is kept.',
    onMerchant((s, id) => s.deleteMerchant(id)),
  ).addOption(merchantFlag());
  command(
    merchant,
    'directory',
    'Add merchants created before the merchant directory to it (the outbox sweeper lists merchants from it).',
    async (values) => {
      const { addToMerchantDirectory, backfillMerchantDirectory } = await import('./directory.ts');
      if (values.merchant === undefined) return backfillMerchantDirectory();
      const merchantId = merchantOption(str(values, 'merchant'));
      await requireExistingMerchant(merchantId);
      return { added: (await addToMerchantDirectory(merchantId)) ? 1 : 0 };
    },
  ).option('--merchant <id>', 'only this merchant (default: every merchant missing from it, found by a Scan of the table)');

  const metrics = resource('metrics', 'Revenue metrics: rebuild, and resume a recount.');
  command(
    metrics,
    'rebuild',
    "Rebuild a merchant's aggregates from its timelines, and its search keys (its writes paused meanwhile); prints a report.",
    async (values) => {
      const merchantId = need(str(values, 'merchant'), 'merchant');
      await requireExistingMerchant(merchantId);
      const [{ rebuildMerchantAggregates }, { repairCustomer }] = await Promise.all([
        import('#lib/metrics'),
        import('#lib/customers/repair'),
      ]);
      return rebuildMerchantAggregates(merchantId, repairCustomer);
    },
  ).addOption(merchantFlag());
  command(
    metrics,
    'resume-recount',
    "Put again the job of a merchant's recount still pending (one given up on: its dead-letter queue); the worker goes on from the customers not yet counted. Prints whether one was put.",
    async (values) => {
      const merchantId = need(str(values, 'merchant'), 'merchant');
      await requireExistingMerchant(merchantId);
      return (await import('#lib/metrics')).resumeRecount(merchantId);
    },
  ).addOption(merchantFlag());

  const token = resource('token', "A merchant's API token: create, show, regenerate, revoke.");
  command(
    token,
    'create',
    "Create the merchant's token (refused while one is valid); prints the token, shown this once.",
    async (values) => {
      const merchantId = need(str(values, 'merchant'), 'merchant');
      const abilities = parseAbilities(str(values, 'abilities'));
      return explainNotFound(merchantId, (await store()).createToken(merchantId, abilities));
    },
  )
    .addOption(merchantFlag())
    .addOption(new Option('--abilities <list>', `comma-separated, of: ${ABILITIES.join(', ')} (default: all of them)`));
  command(
    token,
    'show',
    "Show the merchant's token: status (active, revoked or none), abilities, created and last used times (never the token).",
    showToken,
  ).addOption(merchantFlag());
  command(
    token,
    'regenerate',
    'Replace the valid token by a new one with its abilities; the old one is refused from the next request.',
    onMerchant((s, id) => s.regenerateToken(id)),
  ).addOption(merchantFlag());
  command(
    token,
    'revoke',
    'Revoke the valid token, irreversibly.',
    onMerchant((s, id) => s.revokeToken(id)),
  ).addOption(merchantFlag());

  command(
    program,
    'backoffice-token',
    'Issue a back-office JWT for the LOCAL stack (in AWS, back-office users sign in to Cognito).',
    issueBackofficeToken,
  )
    .addOption(merchantFlag())
    .addOption(roleFlag())
    .addOption(withDefault('--ttl <duration>', 'lifetime, 1s to 1d: 90s, 15m, 1h, 1d', '1h'))
    .option('--email <email>', "the user's e-mail, as a claim of the token");

  const backofficeUser = resource('backoffice-user', 'Back-office users: create.');
  command(
    backofficeUser,
    'create',
    "Create a back-office user in the stack's Cognito user pool (Cognito e-mails a temporary password); locally, say how to issue a token instead.",
    createBackofficeUser,
  )
    .addOption(merchantFlag())
    .option('--email <email>', "the user's e-mail address (required)")
    .addOption(roleFlag())
    .option('--user-pool-id <id>', "the stack's BackofficeIdentity UserPoolId output (default: $BACKOFFICE_USER_POOL_ID)");

  const activity = resource('activity', "A merchant's activity log: list.");
  command(
    activity,
    'list',
    "List a merchant's activity log (one entry per batch request), newest first, as GET /v1/activity answers: {data, meta}.",
    listActivityLog,
  )
    .addOption(merchantFlag())
    .option('--type <type>', 'only this batch type, such as orders.batch')
    .option('--import-run <run>', "only this import run's entries (the run id `ops import` prints)")
    .option('--start-date <date>', 'from this day or time on (YYYY-MM-DD or ISO 8601), inclusive')
    .option('--end-date <date>', 'up to this day or time (YYYY-MM-DD or ISO 8601), inclusive')
    .option('--page <n>', 'page number (default: 1)')
    .option('--per-page <n>', 'entries per page, 1 to 100 (default: 20)')
    .option('--cursor <cursor>', "the previous page's meta.next_cursor (same filters)");

  const events = resource('events', 'Webhook events: replay.');
  command(
    events,
    'replay',
    "Publish again a merchant's webhook events recorded since a time to EVENT_BUS_NAME; receivers drop repeats by webhook-id.",
    replayEvents,
  )
    .addOption(merchantFlag())
    .option('--since <time>', 'an ISO time; the outbox keeps events 3 days (required)');

  const webhooks = resource('webhooks', 'Webhooks: listen, backfill.');
  command(
    webhooks,
    'listen',
    'Run a local webhook receiver on 127.0.0.1 that verifies and prints each delivery, until Ctrl-C.',
    listenForWebhooks,
  )
    .addOption(withDefault('--port <port>', 'the port to listen on', '4000'))
    .addOption(
      new Option(
        '--secret <secret>',
        "an endpoint's signing secret, whsec_…; repeat for several (default: none, nothing verified)",
      ).argParser((v, prev?: string[]) => [...(prev ?? []), v]),
    )
    .addOption(withDefault('--fail-first <n>', 'answer 500 to the first n deliveries, to watch retries', '0'));
  command(
    webhooks,
    'backfill',
    "Add list entries for a merchant's endpoints written before the list existed (once per merchant).",
    async (values) => {
      const merchantId = need(str(values, 'merchant'), 'merchant');
      await requireExistingMerchant(merchantId);
      return (await import('#lib/webhooks/store')).backfillEndpointList(merchantId);
    },
  ).addOption(merchantFlag());

  command(
    program,
    'upgrade',
    "Bring a merchant's items, or every merchant's, to this version's layout (after deploying a version whose notes ask for it; safe to run again).",
    async (values) => {
      const { upgradeAllMerchants, upgradeMerchant } = await import('./upgrade.ts');
      if (values.all) return upgradeAllMerchants();
      const merchantId = need(str(values, 'merchant'), 'merchant');
      await requireExistingMerchant(merchantId);
      return upgradeMerchant(merchantId);
    },
  )
    .option('--merchant <id>', 'the merchant id, mer_… (this or --all)')
    .addOption(new Option('--all', 'every merchant of the merchant directory').conflicts('merchant'));

  command(
    program,
    'import',
    'Import history files through the batch endpoints of a running service (CSV with a header row, or JSONL; columns: docs/importing-history.md).',
    importHistory,
  )
    .option('--url <url>', 'the API root, such as http://localhost:3000/v1 (required)')
    .option(
      '--token <token>',
      'an API token with the write abilities of what is imported (visible to other users in ps: prefer RAS_API_TOKEN or --token-file)',
    )
    .option('--token-file <file>', 'a file holding the API token (its first line)')
    .option('--customers <file>', 'customers file')
    .option('--subscriptions <file>', 'subscriptions file')
    .option('--orders <file>', 'orders file')
    .option('--events <file>', 'subscription events file')
    .addOption(withDefault('--checkpoint <file>', 'where progress is kept, so a stopped run resumes', IMPORT_CHECKPOINT))
    .addOption(withDefault('--failures <file>', 'where failed rows are written with their line and reason', IMPORT_FAILURES))
    .addOption(withDefault('--batch-size <n>', 'rows per batch request, 1 to 100', '100'))
    .option('--on-conflict <mode>', 'customers whose e-mail exists: skip or update (default: skip)');

  // A resource, or ops itself, with no action or an unknown one: name the ones there are.
  for (const cmd of [program, ...program.commands.filter((c) => c.commands.length)]) {
    cmd
      .helpCommand(true)
      .allowUnknownOption()
      .allowExcessArguments()
      .action((_values: Values, self: Command) => {
        const path = self === program ? '' : `${self.name()} `;
        const known = self.commands.map((c) => c.name()).join(', ');
        const [first] = self.args;
        const message =
          first === undefined
            ? `missing command: ops ${path}<${self === program ? 'resource' : 'action'}>, one of ${known}`
            : first.startsWith('-')
              ? `unknown option '${first}'`
              : `unknown command: ${path}${first} (${self === program ? 'commands' : `${self.name()} actions`}: ${known})`;
        self.error(`error: ${message}`, { exitCode: 2, code: 'ops.usage' });
      });
  }
  return program;
};

/** Runs one command line (without `node cli.ts`); resolves to what the command prints, rejects with its error. */
export const runOps = async (argv: string[]): Promise<unknown> => {
  let result: unknown;
  const program = buildProgram((r) => (result = r));
  // `import` speaks HTTP to a running service only: no table of its own.
  program.hook('preAction', (_program, cmd) => {
    if (!cmd.commands.length && cmd.name() !== 'import') useLocalStackWhenUnconfigured();
  });
  await program.parseAsync(argv, { from: 'user' });
  return result;
};

const nonNegativeInt = (raw: string | undefined, flag: string, fallback: number): number => {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${flag} must be a whole number, got ${raw}`);
  return Number(raw);
};

/**
 * `webhooks listen`: a receiver on 127.0.0.1 printing each delivery, verified with the endpoint's
 * secret(s) as a merchant's receiver would (infra/local/webhook-receiver.ts). Register
 * http://localhost:<port> as an endpoint of the local stack, pass its secret, watch events arrive;
 * `--fail-first N` answers 500 to the first N deliveries, to watch retries. Runs until Ctrl-C.
 */
const listenForWebhooks = async (values: Values) => {
  const port = nonNegativeInt(str(values, 'port'), 'port', 4000);
  const failFirst = nonNegativeInt(str(values, 'fail-first'), 'fail-first', 0);
  const secrets = (values.secret as string[] | undefined) ?? [];
  const { startWebhookReceiver } = await import('../local/webhook-receiver.ts');
  const receiver = await startWebhookReceiver({
    port,
    secrets,
    respond: (d, n) => (n <= failFirst ? 500 : d.event || !secrets.length ? 204 : 400),
    onDelivery: (d) => {
      const type =
        d.event?.type ??
        (() => {
          try {
            return JSON.parse(d.body).type;
          } catch {
            return '?';
          }
        })();
      const verdict = d.event ? 'verified' : secrets.length ? `REJECTED (${d.error})` : 'not verified (no --secret)';
      process.stdout.write(`${new Date().toISOString()} ${type} ${d.id} ${verdict}\n${d.event ? `${JSON.stringify(d.event)}\n` : ''}`);
    },
  });
  process.stderr.write(`listening on ${receiver.url} (register it as a webhook endpoint of the local stack); Ctrl-C stops\n`);
  await new Promise<void>((r) => process.once('SIGINT', () => r()));
  await receiver.close();
  return { stopped: true, received: receiver.received.length };
};

/** Where `ops import` keeps its state unless told: a folder of its own, which .gitignore leaves out. */
const IMPORT_STATE_DIR = '.ops-import';
const IMPORT_CHECKPOINT = `${IMPORT_STATE_DIR}/checkpoint.json`;
const IMPORT_FAILURES = `${IMPORT_STATE_DIR}/failures.jsonl`;
/** A state file's path, its folder made. */
const stateFile = (file: string) => {
  mkdirSync(dirname(resolve(file)), { recursive: true });
  return file;
};

/** `import`: history files through the batch endpoints of a running service (infra/ops/import.ts). */
const importHistory = async (values: Values) => {
  const opt = (flag: string) => str(values, flag);
  const url = opt('url');
  const tokenFile = opt('token-file');
  if (tokenFile && !existsSync(tokenFile)) throw new UsageError(`no such file: ${tokenFile} (--token-file)`);
  const token =
    opt('token') ?? (tokenFile ? readFileSync(tokenFile, 'utf8').split('\n')[0]!.trim() : undefined) ?? process.env.RAS_API_TOKEN;
  if (!url) throw new UsageError('--url is required (the API root, such as http://localhost:3000/v1)');
  if (!token)
    throw new UsageError(
      'an API token is required (with the write abilities of what you import): set RAS_API_TOKEN, or give --token-file or --token',
    );
  const batchSize = nonNegativeInt(opt('batch-size'), 'batch-size', 100);
  if (batchSize < 1 || batchSize > 100) throw new UsageError(`--batch-size must be between 1 and 100, got ${batchSize}`);
  const onConflict = opt('on-conflict');
  if (onConflict !== undefined && onConflict !== 'skip' && onConflict !== 'update')
    throw new UsageError(`--on-conflict must be skip or update, got ${onConflict}`);
  const { runImport, KINDS } = await import('./import.ts');
  const files = Object.fromEntries(KINDS.filter((k) => opt(k)).map((k) => [k, opt(k)!]));
  for (const f of Object.values(files)) if (!existsSync(f)) throw new UsageError(`no such file: ${f}`);
  return runImport({
    url,
    token,
    files,
    checkpoint: stateFile(opt('checkpoint') ?? IMPORT_CHECKPOINT),
    failures: stateFile(opt('failures') ?? IMPORT_FAILURES),
    batchSize,
    onConflict,
    progress: Boolean(process.stderr.isTTY),
    interruptible: true,
    log: (line) => process.stderr.write(`${line}\n`),
  });
};

/**
 * `events replay`: every webhook event of the merchant recorded since `--since` published again to
 * the event bus (EVENT_BUS_NAME on AWS, or the emulator at EVENTBRIDGE_ENDPOINT), published before
 * or not (lib/outbox/sweeper.ts `replayOutbox`). Outbox items expire after 3 days: an older start
 * is a usage error naming the oldest time the outbox still holds.
 */
const replayEvents = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  const since = str(values, 'since');
  if (!since) throw new UsageError('--since is required (an ISO time, at most 3 days ago)');
  if (!Number.isFinite(Date.parse(since))) throw new UsageError(`--since must be an ISO time such as 2026-01-31T12:00:00Z, got ${since}`);
  if (process.env.DYNAMODB_ENDPOINT && !process.env.EVENTBRIDGE_ENDPOINT) return replayThroughLocalStack(merchantId, since);
  const [{ getMerchant }, { replayOutbox, ReplayRangeError }, { eventBridgePublisher }] = await Promise.all([
    store(),
    import('#lib/outbox/sweeper'),
    import('#lib/outbox/eventbridge'),
  ]);
  if (!(await getMerchant(merchantId))) throw notFound(merchantId);
  try {
    const stats = await replayOutbox(merchantId, since, { publish: eventBridgePublisher() });
    return { merchant_id: merchantId, since: since, events: stats.events, published: stats.published, unpublished: stats.unpublished };
  } catch (err) {
    if (err instanceof ReplayRangeError) throw new UsageError(err.message);
    throw err;
  }
};

/**
 * `events replay` against `npm start`: its bus lives in that process, so the replay runs there, on
 * its loopback-only `POST /dev/events/replay` (infra/local/dev-events.ts), found through the stack
 * file. Only when that npm start uses the table this command would (the same DynamoDB endpoint).
 */
const replayThroughLocalStack = async (merchantId: string, since: string) => {
  const found = readLocalStackFile();
  const elsewhere = 'or set EVENTBRIDGE_ENDPOINT (and EVENT_BUS_NAME) to replay to an EventBridge emulator';
  if (!found?.running) throw new UsageError(`the local stack's bus lives inside npm start, which is not running: start it, ${elsewhere}`);
  const { stack } = found;
  if (stack.dynamodbEndpoint !== process.env.DYNAMODB_ENDPOINT || stack.tableName !== (process.env.TABLE_NAME ?? stack.tableName)) {
    throw new UsageError(
      `npm start serves the table ${stack.tableName} at ${stack.dynamodbEndpoint}, not the one named here: replay there with its settings, ${elsewhere}`,
    );
  }
  const { DEV_REPLAY_PATH } = await import('../local/dev-events.ts');
  const url = new URL(DEV_REPLAY_PATH, stack.apiUrl);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ merchant: merchantId, since }),
    });
  } catch (err) {
    throw new UsageError(`cannot reach npm start at ${url.origin} (${(err as { cause?: { code?: string } }).cause?.code ?? String(err)})`);
  }
  const body = (await res.json().catch(() => ({}))) as { message?: string };
  if (res.status === 200) return body;
  if (res.status === 404 && !body.message?.startsWith('Merchant ')) {
    throw new UsageError(`the npm start at ${url.origin} takes no replays (its relay did not start, or it runs --bundles): ${elsewhere}`);
  }
  if (res.status === 404) throw notFound(merchantId);
  if (res.status === 422) throw new UsageError(body.message ?? 'refused');
  throw new Error(`npm start answered ${res.status} to the replay: ${body.message ?? ''}`);
};

/**
 * `activity list`: a merchant's activity log (one entry per batch request, kept 13 months), read
 * from the table and printed as GET /v1/activity answers it (`{data, meta}`, newest first). The
 * options are the API's query parameters, checked by the same schema; `--cursor` is the previous
 * page's `meta.next_cursor`.
 */
const listActivityLog = async (values: Values) => {
  const opt = (flag: string) => str(values, flag);
  const merchantId = merchantOption(opt('merchant'));
  const [{ ACTIVITY_TYPES }, { activityListQuery }, { issueMessage }] = await Promise.all([
    import('#lib/activity/rules'),
    import('#lib/activity/schemas'),
    import('#lib/shared/validation'),
  ]);
  const type = opt('type');
  if (type !== undefined && !(ACTIVITY_TYPES as readonly string[]).includes(type))
    throw new UsageError(`--type must be one of ${ACTIVITY_TYPES.join(', ')}, got ${type}`);
  const flags = {
    page: 'page',
    per_page: 'per-page',
    cursor: 'cursor',
    type: 'type',
    import_run: 'import-run',
    start_date: 'start-date',
    end_date: 'end-date',
  } as const;
  const raw = Object.fromEntries(Object.entries(flags).flatMap(([field, flag]) => (opt(flag) === undefined ? [] : [[field, opt(flag)]])));
  const parsed = activityListQuery.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    throw new UsageError(
      parsed.error.issues.map((i) => `--${flags[i.path[0] as keyof typeof flags] ?? String(i.path[0])}: ${issueMessage(i)}`).join('\n'),
    );
  }
  await requireExistingMerchant(merchantId);
  const { listActivity } = await import('#lib/activity/service');
  return listActivity(merchantId, parsed.data);
};

const roleOption = (raw: string | undefined): BackofficeRole => {
  if (!raw) throw new UsageError('--role is required (admin or user)');
  if (!(BACKOFFICE_ROLES as readonly string[]).includes(raw))
    throw new UsageError(`--role must be one of ${BACKOFFICE_ROLES.join(', ')}, got ${raw}`);
  return raw as BackofficeRole;
};

const merchantOption = (raw: string | undefined): string => {
  if (!raw) throw new UsageError('--merchant is required');
  if (readClaims({ [CLAIMS.merchant]: raw }).merchantId === null) throw new UsageError(`--merchant is not a merchant id: ${raw}`);
  return raw;
};

/** `--ttl 90s|15m|1h|1d` (default 1h, at most 1 day: Cognito's longest ID token) → seconds. */
const ttlOption = (raw: string | undefined): number => {
  const m = /^(\d+)(s|m|h|d)?$/.exec(raw ?? '1h');
  const seconds = m ? Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[(m[2] ?? 's') as 's'] : NaN;
  if (!(seconds >= 1 && seconds <= 86400)) throw new UsageError(`--ttl must be 1s to 1d (e.g. 15m, 1h), got ${raw}`);
  return seconds;
};

/**
 * `backoffice-token`: a back-office JWT for the LOCAL stack, signed with its development key
 * (infra/local/backoffice-jwt.ts). In AWS back-office users sign in to Cognito instead.
 */
const issueBackofficeToken = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  const role = roleOption(str(values, 'role'));
  const ttlSeconds = ttlOption(str(values, 'ttl'));
  if (!process.env.DYNAMODB_ENDPOINT) {
    throw new Error(
      'backoffice-token issues tokens for the local stack only (run npm start, or set DYNAMODB_ENDPOINT); in AWS, back-office users sign in to the Cognito user pool',
    );
  }
  await requireExistingMerchant(merchantId);
  const { issueLocalBackofficeToken } = await import('../local/backoffice-jwt.ts');
  const issued = await issueLocalBackofficeToken({ merchantId, role, ttlSeconds, email: str(values, 'email') });
  process.stderr.write(`local back-office token (${role} of ${merchantId}); use it as: Authorization: Bearer <token>\n`);
  return { ...issued, merchant_id: merchantId, role };
};

/**
 * `backoffice-user create`: in AWS, a user of the stack's Cognito pool (--user-pool-id or
 * BACKOFFICE_USER_POOL_ID: the stack's BackofficeIdentity UserPoolId output) with the merchant
 * attribute and the role's group; Cognito e-mails a temporary password. The local stack has no
 * users: it says how to issue a token instead.
 */
const createBackofficeUser = async (values: Values) => {
  const merchantId = merchantOption(str(values, 'merchant'));
  const role = roleOption(str(values, 'role'));
  const email = str(values, 'email')?.trim();
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`--email must be an e-mail address${email ? `, got ${email}` : ''}`);
  const poolId = str(values, 'user-pool-id') ?? process.env.BACKOFFICE_USER_POOL_ID;
  if (!poolId) {
    if (!process.env.DYNAMODB_ENDPOINT)
      throw new UsageError('--user-pool-id (or BACKOFFICE_USER_POOL_ID) is required: the stack output BackofficeIdentity…UserPoolId');
    await requireExistingMerchant(merchantId);
    const command = `npm run -s ops -- backoffice-token --merchant ${merchantId} --role ${role} --email ${email}`;
    process.stderr.write(`the local stack has no user pool: nothing to create. Issue a token for this user with:\n  ${command}\n`);
    return { created: false, local: true, merchant_id: merchantId, email, role, issue_token: command };
  }
  await requireExistingMerchant(merchantId);
  const { createCognitoBackofficeUser } = await import('./cognito.ts');
  return createCognitoBackofficeUser({ poolId, merchantId, email, role });
};

/** `--abilities a,b` → a checked, de-duplicated list; absent → every ability. */
const parseAbilities = (raw: string | undefined): Ability[] | undefined => {
  if (raw === undefined) return undefined;
  const abilities = [
    ...new Set(
      raw
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean),
    ),
  ];
  if (!abilities.length) throw new UsageError(`--abilities needs at least one of: ${ABILITIES.join(', ')}`);
  const unknown = abilities.filter((a) => !(ABILITIES as readonly string[]).includes(a));
  if (unknown.length) throw new UsageError(`unknown abilities: ${unknown.join(', ')} (known: ${ABILITIES.join(', ')})`);
  return abilities as Ability[];
};

/** The store answers a bare 404; the operator needs to know whether the merchant or its token is missing. */
const explainNotFound = async <T>(merchantId: string, op: Promise<T>): Promise<T> => {
  try {
    return await op;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    const merchant = await (await store()).getMerchant(merchantId);
    throw new HttpError(404, {
      message: merchant ? `Merchant ${merchantId} has no valid token.` : `Merchant ${merchantId} does not exist.`,
    });
  }
};

/**
 * With no endpoint and no AWS credentials, use the local stack `npm start` is running, if any. A
 * stack file left by a killed `npm start` is an error here, not a fall-through to AWS (which would
 * only complain about credentials).
 */
const useLocalStackWhenUnconfigured = () => {
  if (process.env.DYNAMODB_ENDPOINT || awsCredentialsConfigured()) return;
  const found = readLocalStackFile();
  if (!found) return;
  if (!found.running) {
    throw new Error(
      `the local stack recorded in ${LOCAL_STACK_FILE_LABEL} is not running (npm start was killed?); start it again or set DYNAMODB_ENDPOINT`,
    );
  }
  const { stack } = found;
  process.env.DYNAMODB_ENDPOINT = stack.dynamodbEndpoint;
  process.env.TABLE_NAME ??= stack.tableName;
  process.env.AWS_REGION ??= 'us-east-1';
  process.stderr.write(`using the local stack: ${stack.dynamodbEndpoint} (table ${process.env.TABLE_NAME})\n`);
};

const main = async () => {
  // Lambda runs Node 22; the lockfile pins SDK versions that still support the Node 20 used locally.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  try {
    const result = await runOps(process.argv.slice(2));
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander printed the help, or the usage error and the command's help, already.
      process.exitCode = err.exitCode === 0 ? 0 : 2;
    } else if (toHttpError(err)) {
      const http = toHttpError(err)!;
      process.stderr.write(`${JSON.stringify({ error: http.body.message, status: http.status })}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
