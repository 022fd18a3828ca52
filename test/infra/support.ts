import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';
import { PROJECT_ROOT } from '../../infra/stack.ts';
import { OUTBOX_RELAY_HANDLER } from '../../infra/constructs/outbox-relay.ts';

/** The same feature flags `cdk synth` runs with. */
export const cdkJsonContext = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context as Record<string, unknown>;

/**
 * A stand-in project root where every handler module of the route table exists (empty), so template
 * tests do not depend on which handlers are written yet. Bundling is skipped, so nothing reads them.
 */
export const useHandlerFixture = (prefix: string) => {
  let root = '';
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), prefix));
    writeFileSync(join(root, 'package.json'), '{"type":"module"}');
    writeFileSync(join(root, 'package-lock.json'), '{}');
    for (const file of [...routeList.map((r) => r.handler), NOT_FOUND_HANDLER, OUTBOX_RELAY_HANDLER]) {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), 'export const handler = () => undefined;\n');
    }
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return {
    get root() {
      return root;
    },
  };
};
