import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { tableName } from '#lib/db/client';
import { BASE_PATH } from '#lib/http/route';
import { createToken, ensureMerchant, regenerateToken, revokeToken } from '#lib/merchants/service';
import { config } from '#lib/config';
import { ensureTable, freePort, isDynamoDbLocalProcess, isPortFree, startDynamoDbLocal, stopDynamoDbLocalProcess } from './dynamodb.ts';
import { buildDashboard, type DashboardOptions } from './dashboard.ts';
import { issueLocalBackofficeToken, LOCAL_BACKOFFICE_JWKS_PATH } from './backoffice-jwt.ts';
import type { StreamConsumerOptions } from './outbox-poller.ts';
import {
  LOCAL_STACK_FILE_LABEL,
  localStateFile,
  readLocalStackFile,
  removeLocalStack,
  removeStaleLocalStack,
  writeLocalStack,
} from './stack-file.ts';

/**
 * `npm start`: DynamoDB Local (unless DYNAMODB_ENDPOINT names one), the table, a demo merchant and
 * token, the API at http://localhost:PORT/v1, and the table stream's consumers: the outbox relay
 * the pending-moves applier and the recount worker (infra/local/outbox-poller.ts, the local stand-in for the stream
 * triggers). Ctrl-C stops everything it started. `npm start -- --bundles`: every function runs
 * from its deployed bundle under Node 22 instead of its source (infra/local/bundles-mode.ts).
 */
const DEMO_MERCHANT = 'mer_demo';

const seedDemo = async (): Promise<string> => {
  if (await ensureMerchant(DEMO_MERCHANT, 'Demo merchant', 'TWD')) return (await createToken(DEMO_MERCHANT)).token;
  // Persisted data (DATA_DIR): the old plain token is unknown, so issue a fresh one.
  try {
    return (await regenerateToken(DEMO_MERCHANT)).token;
  } catch {
    await revokeToken(DEMO_MERCHANT).catch(() => undefined);
    return (await createToken(DEMO_MERCHANT)).token;
  }
};

/**
 * A previous `npm start` that was killed (kill -9) left its stack file and, possibly, its DynamoDB
 * Local running: stop that (only if the pid is still DynamoDB Local) and remove the file.
 */
const cleanUpAfterKilledStart = async () => {
  const found = readLocalStackFile();
  if (!found || found.running) return;
  const { pid, dynamodbPid, dynamodbEndpoint } = found.stack;
  let dynamo = '';
  if (dynamodbPid !== undefined) {
    const port = Number(new URL(dynamodbEndpoint).port) || undefined;
    const check = isDynamoDbLocalProcess(dynamodbPid, port);
    if (check === 'yes') {
      await stopDynamoDbLocalProcess(dynamodbPid, port);
      dynamo = `stopped its orphaned DynamoDB Local (pid ${dynamodbPid}), `;
    } else if (check === 'unknown') {
      dynamo = `could not check its DynamoDB Local (pid ${dynamodbPid}; stop it if it still runs), `;
    }
  }
  removeStaleLocalStack();
  console.log(`A previous npm start (pid ${pid}) was not stopped cleanly: ${dynamo}removed its ${LOCAL_STACK_FILE_LABEL}`);
};

let stopDynamo: (() => Promise<void>) | undefined;
/** The DynamoDB Local being started (before `stopDynamo` exists). */
let startingDynamo: { pid: number; port: number } | undefined;
const servers: Server[] = [];
/** The outbox relay's stream poller; its local bus is where local consumers subscribe. */
let relay: Awaited<ReturnType<typeof import('./outbox-poller.ts').startLocalRelay>> | undefined;
/** The pending-moves applier's stream poller (batches' aggregate moves applied). */
let applier: Awaited<ReturnType<typeof import('./outbox-poller.ts').startLocalPendingApplier>> | undefined;
/** The recount worker's stream poller (the figures recounted after a zone or rate change). */
let recounter: Awaited<ReturnType<typeof import('./outbox-poller.ts').startLocalRecountWorker>> | undefined;
/** Webhook delivery from the local bus (infra/local/webhooks.ts). */
let webhooks: ReturnType<typeof import('./webhooks.ts').startLocalWebhooks> | undefined;
/** Scheduled cancellations (infra/local/cancel-scheduler.ts). */
let cancels: ReturnType<typeof import('./cancel-scheduler.ts').startLocalCancelScheduler> | undefined;
/** `--bundles`: every function's bundle under Node 22, with moto_server (infra/local/bundles-mode.ts). */
let bundlesMode: Awaited<ReturnType<typeof import('./bundles-mode.ts').startBundlesMode>> | undefined;
const BUNDLES = process.argv.slice(2).includes('--bundles');
let stopping = false;

/** Stops what this process started (servers, then DynamoDB Local, awaited) and exits. */
const shutdown = async (code: number) => {
  if (stopping) return;
  stopping = true;
  for (const s of servers) {
    s.close();
    s.closeAllConnections();
  }
  const within3s = (stop: Promise<unknown>) => Promise.race([stop, new Promise((r) => setTimeout(r, 3_000))]);
  // The batch in hand is finished (or dropped after 3 s: unpublished events are read again next start).
  if (relay) await within3s(relay.poller.stop());
  // Likewise: items not applied yet are read in meanwhile, and applied at the next start.
  if (applier) await within3s(applier.stop());
  // A job cut short by stopping is read again at the next start (its item stays until it is ended).
  if (recounter) await within3s(recounter.stop());
  // Attempts under way finish (10 s at most); queued deliveries are not kept across restarts.
  if (webhooks) await within3s(webhooks.stop());
  cancels?.stop();
  // The function processes and moto_server are stopped, not left behind.
  if (bundlesMode) await Promise.race([bundlesMode.stop(), new Promise((r) => setTimeout(r, 10_000))]);
  removeLocalStack();
  if (stopDynamo) await stopDynamo();
  else if (startingDynamo) await stopDynamoDbLocalProcess(startingDynamo.pid, startingDynamo.port).catch(() => undefined);
  process.exit(code);
};

const listen = (port: number, host: string, dashboard: DashboardOptions | undefined): Promise<void> =>
  new Promise((resolveListen, reject) => {
    void createLocalServerLazy(dashboard, bundlesMode?.invoke).then((server) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        // No IPv6 loopback on this machine: IPv4 alone is enough.
        if (host === '::1' && (err.code === 'EADDRNOTAVAIL' || err.code === 'EAFNOSUPPORT')) return resolveListen();
        reject(new Error(`cannot listen on ${host}:${port}: ${err.message}`));
      });
      server.listen(port, host, () => {
        servers.push(server);
        resolveListen();
      });
    }, reject);
  });

/** The server module is imported after the environment is settled (DYNAMODB_ENDPOINT, TABLE_NAME). */
const createLocalServerLazy = async (
  dashboard: DashboardOptions | undefined,
  invoke?: (name: string, e: unknown, timeoutMs?: number) => Promise<unknown>,
) =>
  (await import('./server.ts')).createLocalServer({
    dashboard,
    // `ops events replay` hands the replay to this process, whose relay publishes to the local bus.
    devReplay: relay && (await import('./dev-events.ts')).localReplay(relay.publish),
    // Bundles mode: the route's function answers from its bundle, within the invocation's remaining time.
    invoke: invoke && (async (name, event, context) => (await invoke(name, event, context.getRemainingTimeInMillis())) as never),
  });

/**
 * The dashboard at `/`: web/ is built with Vite when its sources are newer than web/dist (about a
 * second here), and the page signs in as the demo merchant's admin through `/dev/session`.
 */
const prepareDashboard = async (): Promise<DashboardOptions | undefined> => {
  try {
    const { built, ms } = await buildDashboard();
    if (built) console.log(`Dashboard built in ${ms} ms (web/dist)`);
    return { session: async () => (await issueLocalBackofficeToken({ merchantId: DEMO_MERCHANT, role: 'admin' })).token };
  } catch (err) {
    console.warn(`Warning: dashboard not built (${err instanceof Error ? err.message : err}); the API still runs`);
    return undefined;
  }
};

const main = async () => {
  // Registered first, so Ctrl-C during start-up also stops DynamoDB Local.
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.env.STAGE ??= 'local';
  // EMF metric lines are for CloudWatch; locally they would drown the log (docs/operations.md: Observability).
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  // Lambda runs Node 22; the lockfile pins SDK versions that still support the Node 20 used locally.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.env.TABLE_NAME ??= 'revenue-analytics';
  process.env.AWS_REGION ??= 'us-east-1';
  // DynamoDB Local has no partition ceilings to keep the pending-moves applier's pace for; and one local process writes
  // every batch to one metric shard, so the backlog bound that keeps an AWS read small would slow a local import down.
  process.env.APPLIER_WCU_PER_SECOND ??= '0';
  process.env.PENDING_BACKLOG_BOUND ??= '20000';
  await cleanUpAfterKilledStart();
  const port = Number(process.env.PORT ?? 3000);
  const apiUrl = `http://localhost:${port}${BASE_PATH}`;
  let dynamodbPid: number | undefined;
  if (!process.env.DYNAMODB_ENDPOINT) {
    const dataDir = process.env.DATA_DIR;
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    // The default port yields to whatever already holds it; a port asked for explicitly does not.
    const dynamoPort = process.env.DYNAMODB_PORT ? Number(process.env.DYNAMODB_PORT) : (await isPortFree(8000)) ? 8000 : await freePort();
    const dynamo = await startDynamoDbLocal({
      port: dynamoPort,
      dataDir,
      // Recorded as soon as the process exists: if this one is killed, the next start stops it.
      onSpawn: (pid) => {
        startingDynamo = { pid, port: dynamoPort };
        writeLocalStack({ dynamodbEndpoint: `http://127.0.0.1:${dynamoPort}`, tableName: tableName(), apiUrl, dynamodbPid: pid });
      },
    });
    stopDynamo = dynamo.stop;
    dynamodbPid = dynamo.pid;
    process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
    if (dynamo.warning) console.warn(`Warning: ${dynamo.warning}`);
  }
  const endpoint = process.env.DYNAMODB_ENDPOINT;
  await ensureTable(endpoint, tableName());
  const token = await seedDemo();
  if (BUNDLES) {
    const { startBundlesMode } = await import('./bundles-mode.ts');
    const started = Date.now();
    console.log('Bundles mode: building the function bundles (reused when nothing changed) …');
    bundlesMode = await startBundlesMode({
      dynamodbEndpoint: endpoint!,
      tableName: tableName(),
      region: process.env.AWS_REGION!,
      outdir: localStateFile('bundles'),
      stateFile: localStateFile,
      log: (line) => console.log(line),
      overrides: bundleOverrides(),
      backofficeJwksUrl: `http://${loopbackOf(process.env.HOST)}:${port}${LOCAL_BACKOFFICE_JWKS_PATH}`,
    });
    console.log(`Bundles mode: ${bundlesMode.functions} functions ready in ${Date.now() - started} ms`);
  } else await startSourceConsumers(endpoint!);

  const storage = !stopDynamo ? '' : process.env.DATA_DIR ? `, data in ${process.env.DATA_DIR}` : ', in memory';
  const hosts = process.env.HOST ? [process.env.HOST] : ['127.0.0.1', '::1'];
  const dashboard = await prepareDashboard();
  for (const host of hosts) await listen(port, host, dashboard);

  writeLocalStack({ dynamodbEndpoint: endpoint!, tableName: tableName(), apiUrl, dynamodbPid });
  if (dashboard) console.log(`Dashboard               http://localhost:${port}/   (signed in as ${DEMO_MERCHANT}'s admin)`);
  console.log(`Revenue Analytics API   http://localhost:${port}${BASE_PATH}`);
  console.log(`OpenAPI document        http://localhost:${port}${BASE_PATH}/openapi.json`);
  console.log(`DynamoDB endpoint       ${endpoint} (table ${tableName()}${storage})`);
  if (bundlesMode)
    console.log(
      `Functions               their bundles under Node 22 (one process each, started at first use); EventBridge and SQS: moto_server at ${bundlesMode.motoEndpoint} (bus ${bundlesMode.eventBusName})`,
    );
  if (relay) console.log(`Outbox relay            table stream → ${relay.target}; sweeper every 5 minutes (events still pending)`);
  if (applier) console.log(`Pending-moves applier   table stream → batches' aggregate moves applied`);
  if (recounter) console.log(`Recount worker          table stream → the figures recounted after a zone or rate change`);
  if (cancels) console.log(`Scheduled cancellations applied at their cancel_at (${cancels.pending} armed)`);
  if (webhooks)
    console.log(
      `Webhooks                delivered to registered endpoints (one line per attempt); receiver: npm run -s ops -- webhooks listen --port 4000 --secret whsec_…`,
    );
  console.log(`Demo merchant           ${DEMO_MERCHANT}`);
  console.log(`Demo token              ${token}`);
  console.log(
    `Back office             npm run -s ops -- backoffice-token --merchant ${DEMO_MERCHANT} --role admin   (a local JWT for ${BASE_PATH}/backoffice/api-token)`,
  );
  console.log(`\ncurl -H "Authorization: Bearer ${token}" http://localhost:${port}${BASE_PATH}/customers`);
};

/** The address the function processes reach this server at: HOST, or 127.0.0.1 when HOST is unset or a wildcard. */
const loopbackOf = (host: string | undefined): string =>
  !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

/**
 * The local stack's settings a bundle's function gets on top of the stack's environment: those
 * `npm start` sets for itself, and any the developer set for this start.
 */
const bundleOverrides = (): Record<string, string> => {
  const passed = [
    'LOG_LEVEL',
    'POWERTOOLS_METRICS_DISABLED',
    'APPLIER_WCU_PER_SECOND',
    'PENDING_BACKLOG_BOUND',
    'RATE_LIMIT_PER_HOUR',
    'UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE',
    'LOCAL_WEBHOOK_KEY',
    'WEBHOOK_RETRY_DELAYS_SECONDS',
  ];
  return Object.fromEntries(passed.flatMap((k) => (process.env[k] !== undefined ? [[k, process.env[k]!]] : [])));
};

/** The source mode's consumers: the handlers' sources in this process, with the in-process bus and queues. */
const startSourceConsumers = async (endpoint: string) => {
  try {
    relay = await (await import('./outbox-poller.ts')).startLocalRelay({
      endpoint,
      tableName: tableName(),
      checkpointFile: localStateFile('outbox-checkpoint.json'),
      log: (line) => console.log(line),
    });
    // Deliveries from the local bus; with an EventBridge emulator, its own rules and queues are the consumers.
    if (!config.eventBridgeEndpoint())
      webhooks = (await import('./webhooks.ts')).startLocalWebhooks(relay.bus, { log: (line) => console.log(line) });
    cancels = (await import('./cancel-scheduler.ts')).startLocalCancelScheduler(relay.bus, { log: (line) => console.log(line) });
    await cancels.rearm();
  } catch (err) {
    console.warn(`Warning: outbox relay not started (${err instanceof Error ? err.message : err}); no events are published`);
  }
  // The other stream consumers: each on its own checkpoint; one that fails to start says what goes without it.
  type Pollers = typeof import('./outbox-poller.ts');
  const consumer = async <T>(
    what: string,
    without: string,
    start: (p: Pollers, opts: StreamConsumerOptions) => Promise<T>,
    file: string,
  ) => {
    try {
      return await start(await import('./outbox-poller.ts'), {
        endpoint,
        tableName: tableName(),
        checkpointFile: localStateFile(file),
      });
    } catch (err) {
      console.warn(`Warning: ${what} not started (${err instanceof Error ? err.message : err}); ${without}`);
      return undefined;
    }
  };
  applier = await consumer(
    'pending-moves applier',
    "batches' aggregate moves stay pending (read in, so figures are still exact)",
    (p, opts) => p.startLocalPendingApplier(opts),
    'pending-moves-checkpoint.json',
  );
  recounter = await consumer(
    'recount worker',
    'a time zone or rate change stays pending (its figures those of the settings before it) until the recount worker runs',
    (p, opts) => p.startLocalRecountWorker(opts),
    'recount-checkpoint.json',
  );
};

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  void shutdown(1);
});
