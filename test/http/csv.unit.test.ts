import { parse } from 'csv-parse/sync';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { csvPagingHeaders, toCsv } from '#lib/http/csv';
import { routeList } from '#lib/api/routes';

const read = (text: string) => parse(text, { bom: true }) as string[][];

describe('CSV answers', () => {
  const item = z.object({
    id: z.int(),
    name: z.string().nullable(),
    amount: z.string(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  });
  const list = z.object({ data: z.array(item), meta: z.object({ total: z.int() }) });

  it('has the schema fields as its header, in order, even without rows', () => {
    expect(read(toCsv({ data: [] }, list))).toEqual([['id', 'name', 'amount', 'metadata']]);
  });

  it('writes null as an empty cell, objects as JSON text, numbers as JSON writes them', () => {
    const rows = read(toCsv({ data: [{ id: 7, name: null, amount: '-30.00', metadata: { plan: 'Gold', seats: 3 } }] }, list));
    expect(rows[1]).toEqual(['7', '', '-30.00', '{"plan":"Gold","seats":3}']);
  });

  it('quotes what needs quoting (commas, quotes, line breaks) and keeps UTF-8', () => {
    const name = 'Wang, "Xiao" 小明\nline two';
    expect(read(toCsv({ data: [{ id: 1, name, amount: '1.00', metadata: null }] }, list))[1][1]).toBe(name);
  });

  it('defuses text a spreadsheet would run as a formula, but not a negative amount', () => {
    const rows = read(
      toCsv(
        {
          data: ['=HYPERLINK("x")', '+1', '@SUM(A1)', '-5.5', '-x'].map((name, id) => ({
            id,
            name,
            amount: name.startsWith('-5') ? name : '0',
            metadata: null,
          })),
        },
        list,
      ),
    );
    expect(rows.slice(1).map((r) => r[1])).toEqual(['\'=HYPERLINK("x")', "'+1", "'@SUM(A1)", '-5.5', "'-x"]);
    expect(rows[4][2]).toBe('-5.5');
  });

  it('gives one row per element of a nested list, the item fields repeated', () => {
    const cohort = z.object({
      cohort: z.string(),
      customers: z.int(),
      retention: z.array(z.object({ month: z.string(), customers: z.int(), mrr_retention: z.number().nullable() })),
    });
    const body = {
      data: [
        {
          cohort: '2025-01',
          customers: 2,
          retention: [
            { month: '2025-01', customers: 2, mrr_retention: 100 },
            { month: '2025-02', customers: 1, mrr_retention: 62.5 },
          ],
        },
        { cohort: '2025-02', customers: 0, retention: [] },
      ],
    };
    expect(read(toCsv(body, z.object({ data: z.array(cohort) })))).toEqual([
      ['cohort', 'customers', 'retention.month', 'retention.customers', 'retention.mrr_retention'],
      ['2025-01', '2', '2025-01', '2', '100'],
      ['2025-01', '2', '2025-02', '1', '62.5'],
      ['2025-02', '0', '', '', ''],
    ]);
  });

  it('takes one object as one row', () => {
    const one = z.object({ data: z.object({ current_mrr: z.string(), quick_ratio: z.number().nullable() }) });
    expect(read(toCsv({ data: { current_mrr: '10.00', quick_ratio: null } }, one))).toEqual([
      ['current_mrr', 'quick_ratio'],
      ['10.00', ''],
    ]);
  });

  it("moves a list's paging into headers", () => {
    expect(csvPagingHeaders({ data: [], meta: { total: 42, next_cursor: 'abc' } })).toEqual({
      'X-Total-Count': '42',
      'X-Next-Cursor': 'abc',
    });
    expect(csvPagingHeaders({ data: [], meta: { total: 0, next_cursor: null } })).toEqual({ 'X-Total-Count': '0' });
    expect(csvPagingHeaders({ data: {} })).toEqual({});
  });

  it('is offered by exactly the routes that say so (their handlers take csvApiHandler), all of them reads', () => {
    for (const route of routeList) {
      const source = readFileSync(route.handler, 'utf8');
      expect(source.includes('csvApiHandler('), `${route.method} ${route.path}`).toBe(route.csv === true);
      if (route.csv) expect(route.method).toBe('GET');
    }
    expect(routeList.filter((r) => r.csv).map((r) => r.path)).toEqual(
      expect.arrayContaining(['/metrics/mrr', '/metrics/summary', '/metrics/cohorts', '/customers', '/orders']),
    );
  });
});
