import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The shape of lib/, read from the imports of every module under lib/, functions/ and infra/
 * (docs/architecture.md): a folder is a domain, lib/metrics is reached through its face
 * (lib/metrics/index.ts, `#lib/metrics`) only, and the folders' graph has no cycle.
 */
const ROOT = join(import.meta.dirname, '..', '..');

const tsFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );

/** Every module a file names: static `import`/`export … from '…'`, `import '…'` and dynamic `import('…')`, type-only ones too. */
const specifiersOf = (source: string): string[] => [
  ...[...source.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/gms)].map((m) => m[1]),
  ...[...source.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]),
  ...[...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]),
];

/** The folders with a face (`lib/<folder>/index.ts`, imported as `#lib/<folder>`). */
const FACES = ['metrics', 'sales'];
/** A lib/ module's node in the folders' graph: its folder (`metrics`), or the file itself for lib/'s loose files (`config.ts`). */
const nodeOfSpecifier = (spec: string): string | undefined => {
  if (!spec.startsWith('#lib/')) return undefined;
  const parts = spec.slice(5).split('/');
  return parts.length === 1 ? (FACES.includes(parts[0]) ? parts[0] : `${parts[0]}.ts`) : parts[0];
};
const nodeOfFile = (file: string): string => file.split('/')[1];

/** The strongly connected components of a graph with more than one node, or one with an edge to itself: its cycles. */
const cyclesOf = (graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] => {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a.join().localeCompare(b.join()));
};

const graphOf = (edges: [string, string][]): Map<string, Set<string>> => {
  const g = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (!g.has(from)) g.set(from, new Set());
    if (!g.has(to)) g.set(to, new Set());
    g.get(from)!.add(to);
  }
  return g;
};

const LIB = tsFiles('lib');
const SOURCES = [...LIB, ...tsFiles('functions'), ...tsFiles('infra')];
const IMPORTS = new Map(SOURCES.map((file) => [file, specifiersOf(readFileSync(join(ROOT, file), 'utf8'))]));

/** Which lib/ file makes each edge between two folders: `from → to` → the files. */
const LIB_EDGES = new Map<string, string[]>();
for (const file of LIB) {
  const from = nodeOfFile(file);
  for (const spec of IMPORTS.get(file)!) {
    const to = nodeOfSpecifier(spec);
    if (!to || to === from) continue;
    const key = `${from} → ${to}`;
    LIB_EDGES.set(key, [...new Set([...(LIB_EDGES.get(key) ?? []), file])]);
  }
}
const LIB_GRAPH = graphOf([...LIB_EDGES.keys()].map((k) => k.split(' → ') as [string, string]));

/**
 * The one way into lib/metrics besides its face: its route entries, for the route table and the
 * metrics' handlers (a function's bundle carries its own routes only, as every module's routes.ts).
 */
const METRICS_DOORS: Record<string, RegExp> = {
  '#lib/metrics/routes': /^(lib\/api\/routes\.ts|functions\/metrics\/[a-z-]+\.ts)$/,
};

/**
 * The folder cycles lib/ still has: known debts to remove (none now). A new cycle, or a new edge
 * between two folders of one of these, fails the test; an edge removed fails it too, to shrink the lists.
 */
const KNOWN_CYCLES: string[][] = [];
const KNOWN_CYCLE_EDGES: string[] = [];

describe('the cycle finder', () => {
  it('finds a cycle, and the folders in it only', () => {
    const g = graphOf([
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'a'],
      ['c', 'd'],
      ['e', 'e'],
    ]);
    expect(cyclesOf(g)).toEqual([['a', 'b', 'c'], ['e']]);
  });

  it('finds none in a graph without cycles', () => {
    const g = graphOf([
      ['a', 'b'],
      ['a', 'c'],
      ['b', 'd'],
      ['c', 'd'],
    ]);
    expect(cyclesOf(g)).toEqual([]);
  });

  it('reads static, side-effect, type-only and dynamic imports', () => {
    const source = [
      "import { a } from '#lib/x/a';",
      "import type { B } from '#lib/y/b';",
      "export { c } from '#lib/z/c';",
      "import '#lib/w/d';",
      'import {',
      '  e,',
      "} from '#lib/v/e';",
      "const f = await import('#lib/u/f');",
    ].join('\n');
    expect(specifiersOf(source).sort()).toEqual(['#lib/u/f', '#lib/v/e', '#lib/w/d', '#lib/x/a', '#lib/y/b', '#lib/z/c']);
  });
});

describe('imports', () => {
  it('reads every module of lib/ and functions/', () => {
    expect(LIB.length).toBeGreaterThan(100);
    expect([...IMPORTS.values()].flat().length).toBeGreaterThan(500);
    expect(LIB_GRAPH.has('metrics')).toBe(true);
  });

  it("no module outside lib/metrics imports the metrics module's internals: only its face, #lib/metrics", () => {
    const internal = [...IMPORTS]
      .filter(([file]) => !file.startsWith('lib/metrics/'))
      .flatMap(([file, specs]) =>
        specs.filter((s) => s.startsWith('#lib/metrics/') && !METRICS_DOORS[s]?.test(file)).map((s) => `${file}: ${s}`),
      );
    expect(internal).toEqual([]);
  });

  it('lib/api (the route table, the OpenAPI document: every domain at once) is imported by no other folder of lib/', () => {
    const inward = LIB.filter((file) => !file.startsWith('lib/api/')).flatMap((file) =>
      IMPORTS.get(file)!
        .filter((s) => s.startsWith('#lib/api/'))
        .map((s) => `${file}: ${s}`),
    );
    expect(inward).toEqual([]);
    expect(LIB_GRAPH.has('api')).toBe(true);
  });

  it("the face's doors are still used (a door nobody needs is closed)", () => {
    for (const door of Object.keys(METRICS_DOORS)) {
      expect(
        [...IMPORTS].some(([file, specs]) => !file.startsWith('lib/metrics/') && specs.includes(door)),
        door,
      ).toBe(true);
    }
  });

  it("lib/'s folders import each other without a cycle (but for the known debts, exactly)", () => {
    const cycles = cyclesOf(LIB_GRAPH);
    const inCycle = new Map(cycles.flatMap((c) => c.map((n) => [n, c.join()] as const)));
    const cycleEdges = [...LIB_EDGES]
      .filter(([key]) => {
        const [from, to] = key.split(' → ');
        return inCycle.has(from) && inCycle.get(from) === inCycle.get(to);
      })
      .map(([key]) => key)
      .sort();
    expect(cycles).toEqual(KNOWN_CYCLES);
    expect(cycleEdges).toEqual(KNOWN_CYCLE_EDGES);
  });
});
