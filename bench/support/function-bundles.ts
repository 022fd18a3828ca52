import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';
import { OUTBOX_RELAY_HANDLER } from '../../infra/constructs/outbox-relay.ts';
import { WEBHOOK_DELIVER_HANDLER, WEBHOOK_FAN_OUT_HANDLER } from '../../infra/constructs/webhook-delivery.ts';

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * THE INTERFACE item 6 (cold-start proxy) is written against: every Lambda function's bundle as
 * one ESM file, with its size. wt-bundle is building the project's own bundle report (and the
 * 300 KB budget); once merged, `functionBundles` should return its bundles instead of building
 * them here. Until then: esbuild with the options of `ApiFunction` (infra/constructs/api-function.ts).
 */
export type FunctionBundle = {
  /** The handler's source file (relative to the project root): one Lambda function. */
  handler: string;
  /** The bundle (absolute path, ESM, exports `handler`). */
  file: string;
  /** Bytes of the bundle (source map excluded). */
  bytes: number;
};

/** Every function's handler source: one per route, the 404 catch-all, the relay, the webhook consumers. */
export const functionHandlers = (): string[] =>
  [...new Set([...routeList.map((r) => r.handler), NOT_FOUND_HANDLER, OUTBOX_RELAY_HANDLER, WEBHOOK_FAN_OUT_HANDLER, WEBHOOK_DELIVER_HANDLER])].sort();

export const functionBundles = async (outdir: string): Promise<FunctionBundle[]> => {
  mkdirSync(outdir, { recursive: true });
  const handlers = functionHandlers();
  await build({
    absWorkingDir: PROJECT_ROOT,
    entryPoints: handlers.map((h) => ({ in: h, out: h.replace(/^functions\//, '').replace(/\.ts$/, '') })),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    minify: true,
    logLevel: 'error',
  });
  return handlers.map((handler) => {
    const file = resolve(join(outdir, `${handler.replace(/^functions\//, '').replace(/\.ts$/, '')}.mjs`));
    return { handler, file, bytes: statSync(file).size };
  });
};
