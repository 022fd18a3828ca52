/** What each bench item returns: tables for the markdown report, targets checked, raw figures for results.json. */
export type Cell = string | number | null;
export type Table = { title?: string; columns: string[]; rows: Cell[][] };
export type Target = { name: string; value: number | string; target: string; met: boolean };
export type ItemResult = { tables: Table[]; targets: Target[]; notes: string[]; data: unknown };

export type BenchItem = {
  /** `npm run bench -- --only <name>` */
  name: string;
  title: string;
  run: () => Promise<ItemResult>;
};

const cell = (c: Cell): string => (c === null || c === undefined ? '–' : typeof c === 'number' && !Number.isFinite(c) ? 'n/a' : String(c));

export const markdownTable = (t: Table): string =>
  [
    ...(t.title ? [`**${t.title}**`, ''] : []),
    `| ${t.columns.join(' | ')} |`,
    `|${t.columns.map(() => '---').join('|')}|`,
    ...t.rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');

export const markdownItem = (item: BenchItem, r: ItemResult): string =>
  [
    `### ${item.title}`,
    '',
    ...r.tables.flatMap((t) => [markdownTable(t), '']),
    ...(r.targets.length
      ? [...r.targets.map((t) => `- ${t.met ? 'met' : '**MISSED**'}: ${t.name} = ${t.value} (target ${t.target})`), '']
      : []),
    ...(r.notes.length ? [...r.notes.map((n) => `- ${n}`), ''] : []),
  ].join('\n');
