import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SingleBar, Presets } from 'cli-progress';
import { parse as parseCsv } from 'csv-parse/sync';
import { createApiClient, type ApiClient, type components } from '../../clients/typescript/index.ts';

/**
 * `ops import`: a merchant's history from CSV (header row) or JSONL files, sent through the
 * running service's batch endpoints (local or deployed) 100 items at a time, in dependency order:
 * customers, subscriptions, orders, then recorded subscription events. Every batch carries
 * `X-Idempotency-Key: <run>:<kind>:<batch>` and `X-Import-Run: <run>` (the run id, kept in the
 * checkpoint: the activity log lists the run's batches under it); a checkpoint file records each
 * batch answered, so a run stopped anywhere resumes where it stopped, under the same run id, and a
 * finished run is never sent twice. 429 and 503 answers are retried after their `Retry-After`;
 * failed items go to a JSONL file with their row and reason. Columns and a sample:
 * docs/importing-history.md.
 */
export const KINDS = ['customers', 'subscriptions', 'orders', 'events'] as const;
export type Kind = (typeof KINDS)[number];

/** Columns read as whole numbers (ids) rather than text. */
const INTEGER_FIELDS = new Set(['customer_id', 'subscription_id']);

export type ImportOptions = {
  url: string;
  token: string;
  files: Partial<Record<Kind, string>>;
  checkpoint: string;
  failures: string;
  batchSize: number;
  onConflict?: 'skip' | 'update';
  /** Progress bars (a terminal) or nothing. */
  progress: boolean;
  /** Ctrl-C stops the run: the progress bar gives the terminal back and the way to resume is printed (the CLI sets it). */
  interruptible?: boolean;
  /** Longest pause for one Retry-After, and attempts per batch. */
  maxAttempts?: number;
  log?: (line: string) => void;
};

type Row = { line: number; item: Record<string, unknown> | null; error?: string };
type Totals = { rows: number; batches: number; created: number; updated: number; skipped: number; failed: number };
type FileState = { path: string; size: number; mtime_ms: number; batches_done: number; totals: Totals };
type Checkpoint = { version: 1; run_id: string; url: string; complete: boolean; files: Partial<Record<Kind, FileState>> };

export class ImportError extends Error {}

/** What `X-Import-Run` accepts (the API answers 422 to anything else). */
const IMPORT_RUN = /^[A-Za-z0-9._:-]{1,100}$/;

/** A new run id: `run_` and 16 random hex digits (64 bits), within what `X-Import-Run` accepts. */
export const newImportRun = () => `run_${randomBytes(8).toString('hex')}`;

const emptyTotals = (): Totals => ({ rows: 0, batches: 0, created: 0, updated: 0, skipped: 0, failed: 0 });

/** A CSV cell or JSON value as the API takes it: empty cells are absent, ids are numbers, metadata is an object. */
const fromCsvRecord = (record: Record<string, string>): Record<string, unknown> => {
  const item: Record<string, unknown> = {};
  for (const [column, raw] of Object.entries(record)) {
    const value = raw.trim();
    if (value === '') continue;
    if (column.startsWith('metadata.')) {
      const meta = (item.metadata ??= {}) as Record<string, unknown>;
      meta[column.slice('metadata.'.length)] = value;
    } else if (column === 'metadata') {
      try {
        item.metadata = JSON.parse(value);
      } catch {
        item.metadata = value; // the API says why it is not an object
      }
    } else if (INTEGER_FIELDS.has(column) && /^\d+$/.test(value)) item[column] = Number(value);
    else item[column] = value;
  }
  return item;
};

/** Rows of a CSV (header row) or JSONL file, each with its line number (1 = the first line of the file). */
export const readRows = (path: string): Row[] => {
  const text = readFileSync(path, 'utf8');
  const jsonl = /\.(jsonl|ndjson)$/i.test(path) || (!/\.csv$/i.test(path) && text.trimStart().startsWith('{'));
  if (jsonl) {
    return text.split(/\r?\n/).flatMap((raw, i): Row[] => {
      if (!raw.trim()) return [];
      try {
        const item = JSON.parse(raw) as unknown;
        if (!item || typeof item !== 'object' || Array.isArray(item))
          return [{ line: i + 1, item: null, error: 'The line is not a JSON object.' }];
        return [{ line: i + 1, item: item as Record<string, unknown> }];
      } catch (err) {
        return [{ line: i + 1, item: null, error: `The line is not valid JSON: ${(err as Error).message}` }];
      }
    });
  }
  const records = parseCsv(text, { columns: true, skip_empty_lines: true, bom: true, info: true, relax_column_count: false }) as {
    record: Record<string, string>;
    info: { lines: number };
  }[];
  return records.map(({ record, info }) => ({ line: info.lines, item: fromCsvRecord(record) }));
};

const writeCheckpoint = (path: string, cp: Checkpoint) => {
  // Written whole, then renamed over the old one: a stop mid-write never leaves half a checkpoint.
  writeFileSync(`${path}.tmp`, `${JSON.stringify(cp, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
};

const fileIdentity = (path: string) => {
  const st = statSync(path);
  return { path: resolve(path), size: st.size, mtime_ms: Math.floor(st.mtimeMs) };
};

/** The checkpoint to continue from: this run's, or a new one (a checkpoint of other files or another service is refused). */
const openCheckpoint = (opts: ImportOptions): Checkpoint => {
  const wanted = Object.fromEntries(KINDS.filter((k) => opts.files[k]).map((k) => [k, fileIdentity(opts.files[k]!)]));
  if (existsSync(opts.checkpoint)) {
    const cp = JSON.parse(readFileSync(opts.checkpoint, 'utf8')) as Checkpoint;
    const same =
      cp.url === opts.url &&
      Object.keys(wanted).length === Object.keys(cp.files).length &&
      Object.entries(wanted).every(([k, id]) => {
        const f = cp.files[k as Kind];
        return f && f.path === id.path && f.size === id.size && f.mtime_ms === id.mtime_ms;
      });
    if (!same) {
      throw new ImportError(
        `${opts.checkpoint} belongs to another import (other files, or files changed since, or another --url): finish that one, or remove the file to start over`,
      );
    }
    // A checkpoint written before runs had an id (or with one the header cannot carry) gets a new one, kept from here on.
    if (typeof cp.run_id !== 'string' || !IMPORT_RUN.test(cp.run_id)) {
      cp.run_id = newImportRun();
      writeCheckpoint(opts.checkpoint, cp);
      opts.log?.(`${opts.checkpoint} had no run id: its remaining batches are sent as run ${cp.run_id}`);
    }
    return cp;
  }
  return {
    version: 1,
    run_id: newImportRun(),
    url: opts.url,
    complete: false,
    files: Object.fromEntries(Object.entries(wanted).map(([k, id]) => [k, { ...id, batches_done: 0, totals: emptyTotals() }])),
  };
};

type BatchAnswer = {
  status: number;
  body: { data?: components['schemas']['BatchResult']; message?: string; errors?: Record<string, string[]> };
};

/**
 * The typed client (clients/typescript) for one run: its retries are the import's, 429, 502, 503
 * and 504 after Retry-After and a lost answer, `maxAttempts` times in all (every batch carries its
 * idempotency key, so a retry never imports twice).
 */
const clients = new WeakMap<ImportOptions, { steady: ApiClient; first: ApiClient }>();
const clientFor = (opts: ImportOptions, first = false): ApiClient => {
  let pair = clients.get(opts);
  if (!pair) {
    const make = (networkErrors: boolean) =>
      createApiClient({
        baseUrl: opts.url,
        token: opts.token,
        retry: {
          attempts: opts.maxAttempts ?? 10,
          statuses: [429, 502, 503, 504],
          maxDelayMs: MAX_PAUSE_MS,
          networkErrors,
          onRetry: ({ status, delayMs }) => {
            if (status !== null)
              opts.log?.(`${currentKind.get(opts) ?? 'import'}: ${status}, waiting ${Math.round(delayMs / 1000)} s (Retry-After)`);
          },
        },
      });
    // The run's first request is not retried for want of a connection: a wrong address fails at once.
    pair = { steady: make(true), first: make(false) };
    clients.set(opts, pair);
  }
  return first ? pair.first : pair.steady;
};
/** Runs that have had an answer from the service (their later requests ride out a dropped connection). */
const answered = new WeakSet<ImportOptions>();
/** The network error's code (ECONNREFUSED, ENOTFOUND, …), from fetch's `cause`. */
const networkCode = (err: unknown): string =>
  String((err as { cause?: { code?: string } })?.cause?.code ?? (err as { code?: string })?.code ?? (err as Error)?.message);
/** The longest pause before one retry, whatever Retry-After asks. */
const MAX_PAUSE_MS = 60_000;
const currentKind = new WeakMap<ImportOptions, Kind>();

/** One batch through its batch endpoint, with the run's headers. */
const post = (
  client: ApiClient,
  opts: ImportOptions,
  kind: Kind,
  items: unknown[],
  header: { 'x-idempotency-key': string; 'x-import-run': string },
) => {
  switch (kind) {
    case 'customers':
      return client.POST('/customers/batch', {
        params: { header, query: opts.onConflict ? { on_conflict: opts.onConflict } : {} },
        body: { customers: items as components['schemas']['CustomerBatchItem'][] },
      });
    case 'subscriptions':
      return client.POST('/subscriptions/batch', {
        params: { header },
        body: { subscriptions: items as components['schemas']['SubscriptionBatchItem'][] },
      });
    case 'orders':
      return client.POST('/orders/batch', { params: { header }, body: { orders: items as components['schemas']['OrderBatchItem'][] } });
    case 'events':
      return client.POST('/subscriptions/events/batch', {
        params: { header },
        body: { events: items as components['schemas']['SubscriptionEventBatchItem'][] },
      });
  }
};

/** One batch, retried on 429/503 (after Retry-After) and on network errors, with the same idempotency key. */
const send = async (opts: ImportOptions, kind: Kind, items: unknown[], key: string, runId: string): Promise<BatchAnswer> => {
  currentKind.set(opts, kind);
  const first = !answered.has(opts);
  let answer: Awaited<ReturnType<typeof post>>;
  try {
    answer = await post(clientFor(opts, first), opts, kind, items, { 'x-idempotency-key': key, 'x-import-run': runId });
  } catch (err) {
    if (first)
      throw new ImportError(`cannot reach ${opts.url} (${networkCode(err)}): is the service running there? Nothing was sent; check --url`);
    throw new ImportError(`${kind}: the service did not answer (${(err as Error).message}); run the same command again to resume`);
  }
  answered.add(opts);
  const { data, response } = answer;
  // An answer that is not JSON comes as text: its start is the message.
  const error: unknown = answer.error;
  const body = (data ?? (typeof error === 'string' ? { message: error.slice(0, 200) } : (error ?? {}))) as BatchAnswer['body'];
  if (response.status === 401 || response.status === 403)
    throw new ImportError(`${kind}: ${response.status} ${body.message ?? ''} (check --token and its abilities)`.trim());
  // No batch endpoint there: the run stops before anything is marked done.
  if (response.status === 404)
    throw new ImportError(
      `${kind}: ${response.url || opts.url} answered 404: is ${opts.url} the API root (such as http://localhost:3000/v1)? Nothing was marked done`,
    );
  return { status: response.status, body };
};

const customerIds = new Map<string, number | null>();

/**
 * Rows naming their customer by `customer_external_id` (any file) or, for events, by
 * `customer_email` get its id from the service (GET /customers/{external_id}, or an exact match of
 * GET /customers?search=), once per value; an unknown one fails the row.
 */
const resolveCustomer = async (opts: ImportOptions, row: Row, kind: Kind) => {
  const item = row.item!;
  const byExternal = typeof item.customer_external_id === 'string' ? item.customer_external_id : null;
  const byEmail = kind === 'events' && typeof item.customer_email === 'string' ? item.customer_email.toLowerCase() : null;
  if (item.customer_id !== undefined || (!byExternal && !byEmail)) return;
  const cacheKey = byExternal ? `x:${byExternal}` : `e:${byEmail}`;
  if (!customerIds.has(cacheKey)) {
    const client = clientFor(opts);
    const found = byExternal
      ? (await client.GET('/customers/{idOrExternalId}', { params: { path: { idOrExternalId: byExternal } } })).data?.data
      : (await client.GET('/customers', { params: { query: { search: byEmail!, per_page: 100 } } })).data?.data.find(
          (c) => c.email === byEmail,
        );
    customerIds.set(cacheKey, found ? found.id : null);
  }
  const id = customerIds.get(cacheKey);
  delete item.customer_external_id;
  if (kind === 'events') delete item.customer_email;
  if (id) item.customer_id = id;
  else {
    row.item = null;
    row.error = byExternal
      ? `The selected customer external id is invalid: no customer has ${byExternal}.`
      : `The selected customer email is invalid: no customer has ${byEmail}.`;
  }
};

/** Every file's batches from where the checkpoint stands; `showing` is told of each progress bar. */
const importFiles = async (opts: ImportOptions, cp: Checkpoint, showing: (bar: SingleBar | null) => void) => {
  for (const kind of KINDS) {
    const state = cp.files[kind];
    if (!state || cp.complete) continue;
    const rows = readRows(opts.files[kind]!);
    const batches = Math.ceil(rows.length / opts.batchSize);
    state.totals.rows = rows.length;
    const bar = opts.progress
      ? new SingleBar(
          {
            format: `${kind.padEnd(13)} [{bar}] {value}/{total} rows | {created} created, {updated} updated, {skipped} skipped, {failed} failed`,
            hideCursor: true,
          },
          Presets.shades_classic,
        )
      : null;
    showing(bar);
    bar?.start(rows.length, Math.min(rows.length, state.batches_done * opts.batchSize), state.totals);
    for (let b = state.batches_done; b < batches; b++) {
      const slice = rows.slice(b * opts.batchSize, (b + 1) * opts.batchSize);
      const failures: object[] = [];
      const fail = (row: Row, reason: string, message: string, identifier = '') =>
        failures.push({ kind, file: opts.files[kind], line: row.line, identifier, reason, message });
      for (const r of slice) if (r.item && kind !== 'customers') await resolveCustomer(opts, r, kind);
      const sendable = slice.filter((r) => {
        if (r.item) return true;
        fail(r, r.error?.startsWith('The selected') ? 'validation_error' : 'invalid_line', r.error ?? 'The line could not be read.');
        return false;
      });
      const t = state.totals;
      if (sendable.length) {
        const answer = await send(
          opts,
          kind,
          sendable.map((r) => r.item),
          `${cp.run_id}:${kind}:${b + 1}`,
          cp.run_id,
        );
        const results = answer.body.data?.results;
        if (answer.status === 200 && results) {
          t.created += results.created.length;
          t.updated += results.updated.length;
          t.skipped += results.skipped.length;
          for (const f of results.failed) fail(sendable[f.index], f.reason, f.message, f.identifier);
        } else {
          // The whole batch was refused (its shape, or an answer that is not a batch result): every row fails with why.
          const why = answer.body.message ?? `HTTP ${answer.status}`;
          const detail = answer.body.errors ? ` ${JSON.stringify(answer.body.errors)}` : '';
          for (const r of sendable) fail(r, answer.status >= 500 ? 'error' : 'rejected', `${why}${detail}`);
        }
      }
      t.failed += failures.length;
      t.batches += 1;
      for (const f of failures) appendFileSync(opts.failures, `${JSON.stringify(f)}\n`);
      state.batches_done = b + 1;
      writeCheckpoint(opts.checkpoint, cp);
      bar?.update(Math.min(rows.length, (b + 1) * opts.batchSize), t);
    }
    bar?.stop();
    if (!opts.progress)
      opts.log?.(
        `${kind}: ${state.totals.rows} rows, ${state.totals.created} created, ${state.totals.updated} updated, ${state.totals.skipped} skipped, ${state.totals.failed} failed`,
      );
  }
};

/** Runs (or resumes) an import; returns its summary. */
export const runImport = async (opts: ImportOptions) => {
  if (!Object.values(opts.files).some(Boolean))
    throw new ImportError('nothing to import: give at least one of --customers, --orders, --subscriptions, --events');
  const started = Date.now();
  const cp = openCheckpoint(opts);
  const resumed = Object.values(cp.files).some((f) => f!.batches_done > 0);
  if (!resumed) writeFileSync(opts.failures, ''); // a new run's failures only
  if (cp.complete) opts.log?.(`run ${cp.run_id} is already complete (${opts.checkpoint}); nothing is sent again`);
  else if (resumed) opts.log?.(`resuming run ${cp.run_id} from ${opts.checkpoint}`);

  let bar: SingleBar | null = null;
  const interrupted = () => {
    bar?.stop();
    opts.log?.(`\nstopped (Ctrl-C): run the same command again to resume run ${cp.run_id} from ${resolve(opts.checkpoint)}`);
    process.exit(130);
  };
  if (opts.interruptible) process.once('SIGINT', interrupted);
  try {
    await importFiles(opts, cp, (b) => {
      bar = b;
    });
  } finally {
    process.removeListener('SIGINT', interrupted);
    // A run that stopped on an error gives the terminal back too (the bar hides the cursor).
    const shown = bar as SingleBar | null;
    if (shown?.isActive) shown.stop();
  }
  cp.complete = true;
  writeCheckpoint(opts.checkpoint, cp);
  const all = Object.values(cp.files).map((f) => f!.totals);
  const sum = (field: keyof Totals) => all.reduce((n, t) => n + t[field], 0);
  const failed = sum('failed');
  opts.log?.(
    `import run ${cp.run_id}: ${sum('batches')} batches, ${sum('created')} created, ${sum('updated')} updated, ${sum('skipped')} skipped, ${failed} failed` +
      ` (its batches: GET /v1/activity?import_run=${cp.run_id}, or the dashboard's Imports view)`,
  );
  return {
    import_run: cp.run_id,
    resumed,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    ...Object.fromEntries(KINDS.filter((k) => cp.files[k]).map((k) => [k, cp.files[k]!.totals])),
    failures_file: failed ? resolve(opts.failures) : null,
    checkpoint: resolve(opts.checkpoint),
  };
};
