import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The code's boundaries, read from its imports (docs/architecture.md): the pure rules reach no
 * database or HTTP code, even indirectly, and the unit tier's tests start no database or server.
 */
const ROOT = join(import.meta.dirname, '..', '..');

/** Modules an import names, as paths from the project root (`#lib/x` → `lib/x.ts`, or `lib/x/index.ts` for a folder's face, `./y.ts` from the file). */
const importsOf = (file: string): string[] =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)]
    .filter((m) => !/^import\s+type\s/.test(m[0]))
    .map((m) => m[1])
    .flatMap((spec) => {
      if (spec.startsWith('#lib/'))
        return [existsSync(join(ROOT, `lib/${spec.slice(5)}.ts`)) ? `lib/${spec.slice(5)}.ts` : `lib/${spec.slice(5)}/index.ts`];
      if (spec.startsWith('.')) return [resolveLocal(join(file, '..', spec).replace(/\\/g, '/'))];
      return [];
    });

/** The file a relative import names: the dashboard (web/) imports without extensions, as Vite resolves them. */
const resolveLocal = (path: string): string =>
  [path, `${path}.ts`, `${path}.tsx`, `${path}/index.ts`].find((p) => existsSync(join(ROOT, p)) && statSync(join(ROOT, p)).isFile()) ??
  path;

/** Every local module `file` loads, directly or not. */
const reach = (file: string, seen = new Set<string>()): Set<string> => {
  for (const dep of importsOf(file)) {
    if (seen.has(dep)) continue;
    seen.add(dep);
    reach(dep, seen);
  }
  return seen;
};

/** Every resource's rules (`lib/<resource>/rules.ts`), and the other pure modules. */
const RULES = readdirSync(join(ROOT, 'lib'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'lib', e.name, 'rules.ts')))
  .map((e) => `lib/${e.name}/rules.ts`);
const PURE_RULES = [
  ...RULES,
  'lib/subscriptions/effective.ts',
  'lib/metrics/timeline.ts',
  'lib/shared/money.ts',
  'lib/shared/time.ts',
  'lib/shared/currency.ts',
  'lib/webhooks/schedule.ts',
];

/** The lib/ folder a handler folder serves (functions/<folder>/), where the two names differ. */
const RESOURCE_OF: Record<string, string> = { backoffice: 'merchants', system: '(?:http|api)' };
/** What every handler may load besides its own resource: the pipeline (JSON, or JSON and CSV), the domain errors, shared fields, a batch's idempotency. */
const COMMON = /^lib\/(api\/(csv-)?handler|errors|shared\/[a-z-]+|db\/idempotency)\.ts$/;

describe('boundaries', () => {
  it('every resource has its rules, in the unit tier', () => {
    expect(RULES.length).toBeGreaterThanOrEqual(3);
    for (const file of RULES) expect(existsSync(join(ROOT, 'test', file.split('/')[1], 'rules.unit.test.ts')), file).toBe(true);
  });

  it("a handler imports only its own resource's modules", () => {
    for (const dir of readdirSync(join(ROOT, 'functions'))) {
      const own = new RegExp(`^lib/${RESOURCE_OF[dir] ?? dir}/`);
      for (const name of readdirSync(join(ROOT, 'functions', dir))) {
        const file = `functions/${dir}/${name}`;
        expect(
          importsOf(file).filter((m) => !own.test(m) && !COMMON.test(m)),
          file,
        ).toEqual([]);
      }
    }
  });

  it('the pure rules load no database, HTTP or AWS code, even indirectly', () => {
    for (const file of PURE_RULES) {
      const loaded = [...reach(file)];
      expect(
        loaded.filter((m) => /^lib\/(db|http|outbox)\//.test(m)),
        file,
      ).toEqual([]);
      expect(readFileSync(join(ROOT, file), 'utf8'), file).not.toMatch(/from '@aws-sdk\//);
    }
  });

  it("the unit tier's tests start no database, server or browser", () => {
    const find = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? find(`${dir}/${e.name}`) : e.name.endsWith('.unit.test.ts') ? [`${dir}/${e.name}`] : [],
      );
    const units = find('test');
    expect(units.length).toBeGreaterThan(10);
    for (const file of units) {
      const loaded = [...reach(file)];
      expect(
        loaded.filter((m) => /^(test\/support\/(api|global-setup|cli|seed)|infra\/local\/(server|dynamodb-local))\.ts$/.test(m)),
        file,
      ).toEqual([]);
    }
  });
});
