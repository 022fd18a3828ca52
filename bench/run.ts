import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { markdownItem, type BenchItem, type ItemResult } from './support/report.ts';

/**
 * `npm run bench [-- --only scaling,import]`: starts DynamoDB Local, runs the benchmark items
 * (each a module of bench/items/), prints one markdown section per item and writes
 * bench/results.json (items not run keep their previous figures there).
 */
// Before any lib module reads them: quiet logs, no rate limit in the way of thousands of calls.
process.env.LOG_LEVEL ??= 'SILENT';
process.env.RATE_LIMIT_PER_HOUR ??= String(1e9);
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE ??= String(1e9);
process.env.STAGE ??= 'local';
// As `npm start`: no EMF lines on stdout among the report (the overhead item's handler side is that much lighter).
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.TABLE_NAME ??= 'revenue-analytics-bench';
// A shared 2-core machine can stall an invocation for seconds; the bench measures, it does not time out.
process.env.LOCAL_FUNCTION_TIMEOUT_MS ??= '60000';

const ITEMS: Record<string, () => Promise<{ item: BenchItem }>> = {
  cost: () => import('./items/cost.ts'),
  scaling: () => import('./items/scaling.ts'),
  overhead: () => import('./items/overhead.ts'),
  import: () => import('./items/import.ts'),
  'hot-merchant': () => import('./items/hot-merchant.ts'),
  'cold-start': () => import('./items/cold-start.ts'),
  http: () => import('./items/http.ts'),
  'metadata-segment': () => import('./items/metadata-segment.ts'),
};

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(HERE, 'results.json');

const { values } = parseArgs({ options: { only: { type: 'string' } } });
const selected = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(ITEMS);
const unknown = selected.filter((s) => !ITEMS[s]);
if (unknown.length) {
  console.error(`unknown item(s): ${unknown.join(', ')}; items: ${Object.keys(ITEMS).join(', ')}`);
  process.exit(2);
}

const machine = () => ({
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  memory_gb: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  load_average: loadavg().map((l) => Number(l.toFixed(2))),
});

const main = async () => {
  const { freePort, startDynamoDbLocal, ensureTable } = await import('../infra/local/dynamodb.ts');
  const started = Date.now();
  const dynamo = await startDynamoDbLocal({ port: await freePort() });
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  await ensureTable(dynamo.endpoint, process.env.TABLE_NAME!);
  const before = machine();
  console.log(
    `# npm run bench (${new Date().toISOString()})\n\nMachine: ${before.cpu}, ${before.cores} cores, ${before.memory_gb} GB, Node ${before.node}; load average at start ${before.load_average.join(' / ')}\n`,
  );
  const results: Record<string, ItemResult & { title: string; seconds: number }> = {};
  let failed = false;
  try {
    for (const name of selected) {
      const { item } = await ITEMS[name]();
      const t0 = Date.now();
      try {
        const r = await item.run();
        results[name] = { title: item.title, seconds: Math.round((Date.now() - t0) / 1000), ...r };
        console.log(markdownItem(item, r));
        console.log(`(${results[name].seconds} s)\n`);
      } catch (err) {
        failed = true;
        console.error(`item ${name} failed:`, err);
      }
    }
  } finally {
    await dynamo.stop();
  }
  const previous = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {};
  const out = {
    ...previous,
    run: {
      at: new Date(started).toISOString(),
      seconds: Math.round((Date.now() - started) / 1000),
      items: selected,
      machine: before,
      load_average_end: machine().load_average,
    },
    items: { ...(previous.items ?? {}), ...results },
  };
  writeFileSync(RESULTS, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`results: ${RESULTS} (${Math.round((Date.now() - started) / 1000)} s)`);
  process.exit(failed ? 1 : 0);
};

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
