// `npm run test:slow` / `npm run test:reliability`: each suite file of one kind (`test/**/*.<kind>.test.ts`,
// kind `slow` by default, or the first argument) in its own vitest run, so each gets a fresh DynamoDB
// Local and none inherits another's data, streams or stragglers.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const kind = process.argv[2] ?? 'slow';
if (!/^[a-z][a-z0-9]*$/.test(kind)) throw new Error(`suite kind must be a word, got ${kind}`);
const suffix = `.${kind}.test.ts`;
const root = join(import.meta.dirname, '..', '..');
const find = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith(suffix) ? [join(dir, e.name)] : [],
  );
const files = find(join(root, 'test'))
  .map((f) => relative(root, f))
  .sort();
const failed = [];
const started = Date.now();
for (const file of files) {
  const run = spawnSync(
    process.execPath,
    [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.slow.config.ts', file],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, SUITE_KIND: kind },
    },
  );
  if (run.status !== 0) failed.push(file);
}
console.info(`${kind} suites: ${files.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (failed.length) {
  console.error(`${kind} suites failed: ${failed.join(', ')}`);
  process.exit(1);
}
