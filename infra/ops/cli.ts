import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ABILITIES, type Ability } from '#lib/http/route';
import { HttpError, toHttpError } from '#lib/http/errors';
import { NotFoundError } from '#lib/errors';
import { isCurrency } from '#lib/shared/currency';
import { BACKOFFICE_ROLES, CLAIMS, readClaims, type BackofficeRole } from '#lib/auth/backoffice';
import { awsCredentialsConfigured, LOCAL_STACK_FILE_LABEL, readLocalStackFile } from '../local/stack-file.ts';

/** Loaded only for a well-formed command: usage errors answer at once, without the AWS SDK. */
const store = () => import('#lib/merchants/store');

/**
 * Operator tooling: `npm run ops -- <resource> <action> [options]`. Talks to the DynamoDB named by
 * DYNAMODB_ENDPOINT (local) or the default AWS credentials chain, and the table TABLE_NAME.
 */
const USAGE = `usage:
  ops merchant create --name NAME [--currency TWD]
  ops merchant delete --merchant ID          (its token is refused from the next request; data kept)
  ops merchant directory [--merchant ID]    (lists merchants created before the directory in it, for the outbox sweeper;
             without --merchant: every such merchant, found by a Scan of the table)
  ops metrics rebuild --merchant ID         (aggregates from the timelines, search keys; writes paused)
  ops token create --merchant ID [--abilities customers:read,orders:read]
  ops token regenerate --merchant ID
  ops token revoke --merchant ID
  ops backoffice-token --merchant ID --role admin|user [--ttl 1h] [--email E]      (local stack only)
  ops backoffice-user create --merchant ID --email E --role admin|user [--user-pool-id ID]
  ops activity list --merchant ID [--type T] [--import-run R] [--start-date D] [--end-date D]
             [--page N] [--per-page N] [--cursor C]      (the activity log, as GET /v1/activity lists it)
  ops events replay --merchant ID --since T   (publishes again the merchant's webhook events recorded since T, an ISO time,
             to EVENT_BUS_NAME; the outbox keeps events 3 days, so T may be at most 3 days ago; receivers drop repeats by webhook-id)
  ops webhooks listen [--port 4000] [--secret whsec_… (repeatable)] [--fail-first N]
  ops webhooks backfill --merchant ID       (list entries for endpoints written before them; once per merchant)
  ops upgrade --merchant ID | --all         (brings a merchant's items, or every merchant's, to this version's layout;
             run once after deploying a version whose notes ask for it; safe to run again)
  ops import --url URL --token TOKEN [--customers F] [--subscriptions F] [--orders F] [--events F]
             [--checkpoint import-checkpoint.json] [--failures import-failures.jsonl] [--batch-size 100] [--on-conflict skip|update]
             (CSV with a header row, or JSONL; columns: docs/importing-history.md)`;

export const runOps = async (argv: string[]): Promise<unknown> => {
  const { positionals, values } = parseOptions(argv);
  const [resource, action] = positionals;
  const need = (v: string | undefined, flag: string): string => {
    if (!v) throw new UsageError(`--${flag} is required`);
    return v;
  };
  switch (`${resource} ${action}`) {
    case 'merchant create':
      if (values.currency !== undefined && !isCurrency(values.currency)) {
        throw new UsageError(`--currency must be an ISO 4217 code, got ${values.currency}`);
      }
      return (await store()).createMerchant(need(values.name, 'name'), values.currency);
    case 'merchant delete': {
      const merchantId = need(values.merchant, 'merchant');
      return explainNotFound(merchantId, (await store()).deleteMerchant(merchantId));
    }
    case 'merchant directory': {
      const { addToMerchantDirectory, backfillMerchantDirectory } = await import('./directory.ts');
      if (values.merchant === undefined) return backfillMerchantDirectory();
      const merchantId = merchantOption(values.merchant);
      if (!(await (await store()).getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
      return { added: (await addToMerchantDirectory(merchantId)) ? 1 : 0 };
    }
    case 'metrics rebuild': {
      const merchantId = need(values.merchant, 'merchant');
      const [{ getMerchant }, { rebuildMerchantAggregates }] = await Promise.all([store(), import('#lib/metrics/rebuild')]);
      if (!(await getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
      return rebuildMerchantAggregates(merchantId);
    }
    case 'token create': {
      const merchantId = need(values.merchant, 'merchant');
      const abilities = parseAbilities(values.abilities);
      return explainNotFound(merchantId, (await store()).createToken(merchantId, abilities));
    }
    case 'token regenerate': {
      const merchantId = need(values.merchant, 'merchant');
      return explainNotFound(merchantId, (await store()).regenerateToken(merchantId));
    }
    case 'token revoke': {
      const merchantId = need(values.merchant, 'merchant');
      return explainNotFound(merchantId, (await store()).revokeToken(merchantId));
    }
    case 'activity list':
      return listActivityLog(values);
    case 'events replay':
      return replayEvents(values);
    case 'webhooks listen':
      return listenForWebhooks(values);
    case 'webhooks backfill': {
      const merchantId = need(values.merchant, 'merchant');
      const [{ getMerchant }, { backfillEndpointList }] = await Promise.all([store(), import('#lib/webhooks/store')]);
      if (!(await getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
      return backfillEndpointList(merchantId);
    }
    case 'upgrade undefined': {
      const { upgradeAllMerchants, upgradeMerchant } = await import('./upgrade.ts');
      if (values.all) return upgradeAllMerchants();
      const merchantId = need(values.merchant, 'merchant');
      if (!(await (await store()).getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
      return upgradeMerchant(merchantId);
    }
    case 'import undefined':
      return importHistory(values);
    case 'backoffice-token undefined':
      return issueBackofficeToken(values);
    case 'backoffice-user create':
      return createBackofficeUser(values);
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`);
  }
};

class UsageError extends Error {}

const parseOptions = (argv: string[]) => {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        currency: { type: 'string' },
        merchant: { type: 'string' },
        abilities: { type: 'string' },
        port: { type: 'string' },
        secret: { type: 'string', multiple: true },
        'fail-first': { type: 'string' },
        role: { type: 'string' },
        ttl: { type: 'string' },
        email: { type: 'string' },
        'user-pool-id': { type: 'string' },
        url: { type: 'string' },
        token: { type: 'string' },
        customers: { type: 'string' },
        subscriptions: { type: 'string' },
        orders: { type: 'string' },
        events: { type: 'string' },
        checkpoint: { type: 'string' },
        failures: { type: 'string' },
        'batch-size': { type: 'string' },
        'on-conflict': { type: 'string' },
        type: { type: 'string' },
        'import-run': { type: 'string' },
        'start-date': { type: 'string' },
        'end-date': { type: 'string' },
        page: { type: 'string' },
        'per-page': { type: 'string' },
        cursor: { type: 'string' },
        since: { type: 'string' },
        all: { type: 'boolean' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
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
const listenForWebhooks = async (values: { port?: string; secret?: string[]; 'fail-first'?: string }) => {
  const port = nonNegativeInt(values.port, 'port', 4000);
  const failFirst = nonNegativeInt(values['fail-first'], 'fail-first', 0);
  const secrets = values.secret ?? [];
  const { startWebhookReceiver } = await import('../local/webhook-receiver.ts');
  const receiver = await startWebhookReceiver({
    port,
    secrets,
    respond: (d, n) => (n <= failFirst ? 500 : d.event || !secrets.length ? 204 : 400),
    onDelivery: (d) => {
      const type = d.event?.type ?? (() => { try { return JSON.parse(d.body).type; } catch { return '?'; } })();
      const verdict = d.event ? 'verified' : secrets.length ? `REJECTED (${d.error})` : 'not verified (no --secret)';
      process.stdout.write(`${new Date().toISOString()} ${type} ${d.id} ${verdict}\n${d.event ? `${JSON.stringify(d.event)}\n` : ''}`);
    },
  });
  process.stderr.write(`listening on ${receiver.url} (register it as a webhook endpoint of the local stack); Ctrl-C stops\n`);
  await new Promise<void>((r) => process.once('SIGINT', () => r()));
  await receiver.close();
  return { stopped: true, received: receiver.received.length };
};

/** `import`: history files through the batch endpoints of a running service (infra/ops/import.ts). */
const importHistory = async (values: Record<string, string | string[] | boolean | undefined>) => {
  const str = (flag: string) => values[flag] as string | undefined;
  const url = str('url');
  const token = str('token');
  if (!url) throw new UsageError('--url is required (the API root, such as http://localhost:3000/v1)');
  if (!token) throw new UsageError('--token is required (an API token with the write abilities of what you import)');
  const batchSize = nonNegativeInt(str('batch-size'), 'batch-size', 100);
  if (batchSize < 1 || batchSize > 100) throw new UsageError(`--batch-size must be between 1 and 100, got ${batchSize}`);
  const onConflict = str('on-conflict');
  if (onConflict !== undefined && onConflict !== 'skip' && onConflict !== 'update') throw new UsageError(`--on-conflict must be skip or update, got ${onConflict}`);
  const { runImport, KINDS } = await import('./import.ts');
  const files = Object.fromEntries(KINDS.filter((k) => str(k)).map((k) => [k, str(k)!]));
  for (const f of Object.values(files)) if (!existsSync(f)) throw new UsageError(`no such file: ${f}`);
  return runImport({
    url,
    token,
    files,
    checkpoint: str('checkpoint') ?? 'import-checkpoint.json',
    failures: str('failures') ?? 'import-failures.jsonl',
    batchSize,
    onConflict,
    progress: Boolean(process.stderr.isTTY),
    log: (line) => process.stderr.write(`${line}\n`),
  });
};

/**
 * `events replay`: every webhook event of the merchant recorded since `--since` published again to
 * the event bus (EVENT_BUS_NAME on AWS, or the emulator at EVENTBRIDGE_ENDPOINT), published before
 * or not (lib/events/sweeper.ts `replayOutbox`). Outbox items expire after 3 days: an older start
 * is a usage error naming the oldest time the outbox still holds.
 */
const replayEvents = async (values: { merchant?: string; since?: string }) => {
  const merchantId = merchantOption(values.merchant);
  if (!values.since) throw new UsageError('--since is required (an ISO time, at most 3 days ago)');
  if (!Number.isFinite(Date.parse(values.since))) throw new UsageError(`--since must be an ISO time such as 2026-01-31T12:00:00Z, got ${values.since}`);
  if (process.env.DYNAMODB_ENDPOINT && !process.env.EVENTBRIDGE_ENDPOINT) {
    throw new UsageError("the local stack's bus lives inside npm start: set EVENTBRIDGE_ENDPOINT (and EVENT_BUS_NAME) to replay to an EventBridge emulator");
  }
  const [{ getMerchant }, { replayOutbox, ReplayRangeError }, { eventBridgePublisher }] = await Promise.all([
    store(),
    import('#lib/events/sweeper'),
    import('#lib/events/eventbridge'),
  ]);
  if (!(await getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
  try {
    const stats = await replayOutbox(merchantId, values.since, { publish: eventBridgePublisher() });
    return { merchant_id: merchantId, since: values.since, events: stats.events, published: stats.published, unpublished: stats.unpublished };
  } catch (err) {
    if (err instanceof ReplayRangeError) throw new UsageError(err.message);
    throw err;
  }
};

/**
 * `activity list`: a merchant's activity log (one entry per batch request, kept 13 months), read
 * from the table and printed as GET /v1/activity answers it (`{data, meta}`, newest first). The
 * options are the API's query parameters, checked by the same schema; `--cursor` is the previous
 * page's `meta.next_cursor`.
 */
const listActivityLog = async (values: Record<string, string | string[] | boolean | undefined>) => {
  const str = (flag: string) => values[flag] as string | undefined;
  const merchantId = merchantOption(str('merchant'));
  const [{ ACTIVITY_TYPES }, { activityListQuery }, { issueMessage }] = await Promise.all([
    import('#lib/activity/rules'),
    import('#lib/activity/schemas'),
    import('#lib/shared/validation'),
  ]);
  const type = str('type');
  if (type !== undefined && !(ACTIVITY_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type must be one of ${ACTIVITY_TYPES.join(', ')}, got ${type}`);
  const flags = { page: 'page', per_page: 'per-page', cursor: 'cursor', type: 'type', import_run: 'import-run', start_date: 'start-date', end_date: 'end-date' } as const;
  const raw = Object.fromEntries(Object.entries(flags).flatMap(([field, flag]) => (str(flag) === undefined ? [] : [[field, str(flag)]])));
  const parsed = activityListQuery.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    throw new UsageError(parsed.error.issues.map((i) => `--${flags[i.path[0] as keyof typeof flags] ?? String(i.path[0])}: ${issueMessage(i)}`).join('\n'));
  }
  await requireExistingMerchant(merchantId);
  const { listActivity } = await import('#lib/activity/read');
  return listActivity(merchantId, parsed.data);
};

const roleOption = (raw: string | undefined): BackofficeRole => {
  if (!raw) throw new UsageError('--role is required (admin or user)');
  if (!(BACKOFFICE_ROLES as readonly string[]).includes(raw)) throw new UsageError(`--role must be one of ${BACKOFFICE_ROLES.join(', ')}, got ${raw}`);
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

const requireExistingMerchant = async (merchantId: string) => {
  if (!(await (await store()).getMerchant(merchantId))) throw new HttpError(404, { message: `Merchant ${merchantId} does not exist.` });
};

/**
 * `backoffice-token`: a back-office JWT for the LOCAL stack, signed with its development key
 * (infra/local/backoffice-jwt.ts). In AWS back-office users sign in to Cognito instead.
 */
const issueBackofficeToken = async (values: { merchant?: string; role?: string; ttl?: string; email?: string }) => {
  const merchantId = merchantOption(values.merchant);
  const role = roleOption(values.role);
  const ttlSeconds = ttlOption(values.ttl);
  if (!process.env.DYNAMODB_ENDPOINT) {
    throw new Error('backoffice-token issues tokens for the local stack only (run npm start, or set DYNAMODB_ENDPOINT); in AWS, back-office users sign in to the Cognito user pool');
  }
  await requireExistingMerchant(merchantId);
  const { issueLocalBackofficeToken } = await import('../local/backoffice-jwt.ts');
  const issued = await issueLocalBackofficeToken({ merchantId, role, ttlSeconds, email: values.email });
  process.stderr.write(`local back-office token (${role} of ${merchantId}); use it as: Authorization: Bearer <token>\n`);
  return { ...issued, merchant_id: merchantId, role };
};

/**
 * `backoffice-user create`: in AWS, a user of the stack's Cognito pool (--user-pool-id or
 * BACKOFFICE_USER_POOL_ID: the stack's BackofficeIdentity UserPoolId output) with the merchant
 * attribute and the role's group; Cognito e-mails a temporary password. The local stack has no
 * users: it says how to issue a token instead.
 */
const createBackofficeUser = async (values: { merchant?: string; role?: string; email?: string; 'user-pool-id'?: string }) => {
  const merchantId = merchantOption(values.merchant);
  const role = roleOption(values.role);
  const email = values.email?.trim();
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`--email must be an e-mail address${email ? `, got ${email}` : ''}`);
  const poolId = values['user-pool-id'] ?? process.env.BACKOFFICE_USER_POOL_ID;
  if (!poolId) {
    if (!process.env.DYNAMODB_ENDPOINT) throw new UsageError('--user-pool-id (or BACKOFFICE_USER_POOL_ID) is required: the stack output BackofficeIdentity…UserPoolId');
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
  const abilities = [...new Set(raw.split(',').map((a) => a.trim()).filter(Boolean))];
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
    // `import` speaks HTTP to a running service only: no table of its own.
    if (process.argv[2] !== 'import') useLocalStackWhenUnconfigured();
    const result = await runOps(process.argv.slice(2));
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n${USAGE}\n`);
      process.exitCode = 2;
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
