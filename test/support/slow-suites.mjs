// `npm run test:slow`: each load suite (`test/**/*.slow.test.ts`) in its own vitest run, so each
// gets a fresh DynamoDB Local and none inherits another's data, streams or stragglers.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const find = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('.slow.test.ts') ? [join(dir, e.name)] : []));
const files = find(join(root, 'test')).map((f) => relative(root, f)).sort();
const failed = [];
for (const file of files) {
  const run = spawnSync(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.slow.config.ts', file], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) failed.push(file);
}
if (failed.length) {
  console.error(`slow suites failed: ${failed.join(', ')}`);
  process.exit(1);
}
