import { describe, expect, it } from 'vitest';
import {
  bucketStarts,
  cohortTable,
  foldRange,
  rangeReads,
  resolveCohortRange,
  resolveRange,
  series,
  summaryOf,
  summaryRange,
  type Range,
} from '#lib/metrics/rules';
import { refusal } from '../support/refusal.ts';

/** The metrics reads' arithmetic in memory: buckets, which items a range reads, folding them, entries, rates, cohorts. */

const month = (m: string, attrs: Record<string, number | string>) => ({ sk: `M#${m}#0`, ...attrs });
const day = (d: string, attrs: Record<string, number | string>, shard = 0) => ({ sk: `D#${d}#${shard}`, ...attrs });

describe('buckets', () => {
  it('start at the range start, then each Monday, 1st of a month, quarter or year', () => {
    expect([...bucketStarts('2026-01-14', '2026-02-02', 'week')]).toEqual(['2026-01-14', '2026-01-19', '2026-01-26', '2026-02-02']);
    expect([...bucketStarts('2026-02-15', '2026-08-10', 'quarter')]).toEqual(['2026-02-15', '2026-04-01', '2026-07-01']);
    expect([...bucketStarts('2024-06-30', '2026-01-01', 'year')]).toEqual(['2024-06-30', '2025-01-01', '2026-01-01']);
    expect([...bucketStarts('2024-02-28', '2024-03-01', 'day')]).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
  });
});

describe('what a range reads', () => {
  it('monthly: the roll-ups to its last month, and days only outside the range in its partial first and last months', () => {
    expect(rangeReads({ start: '2026-02-10', end: '2026-04-20', interval: 'month' })).toEqual({
      monthsTo: 'M#2026-04#~',
      dayRanges: [
        ['D#2026-02-01', 'D#2026-02-09#~'],
        ['D#2026-04-21', 'D#2026-04-30#~'],
      ],
    });
    expect(rangeReads({ start: '2026-01-01', end: '2026-12-31', interval: 'quarter' }).dayRanges).toEqual([]);
  });

  it('daily and weekly: the roll-ups before its first month, and every day from that month’s 1st', () => {
    expect(rangeReads({ start: '2026-02-10', end: '2026-03-05', interval: 'week' })).toEqual({
      monthsTo: 'M#2026-02',
      dayRanges: [['D#2026-02-01', 'D#2026-03-05#~']],
    });
  });
});

describe('folding items into levels and bucket movements', () => {
  // January: +100 new on the 5th. February: +50 expansion on the 3rd, −30 contraction on the 20th. Each month's roll-up holds its days.
  const stored = {
    months: [month('2026-01', { n: 100, ac: 1 }), month('2026-02', { e: 50, x: -30 })],
    days: [day('2026-01-05', { n: 100, ac: 1 }), day('2026-02-03', { e: 50 }), day('2026-02-20', { x: '-30' }, 3)],
  };
  /** What the store returns for a range: the items inside `rangeReads`' bounds. */
  const read = (range: Range) => {
    const { monthsTo, dayRanges } = rangeReads(range);
    return {
      months: stored.months.filter((i) => i.sk <= monthsTo),
      days: stored.days.filter((i) => dayRanges.some(([lo, hi]) => i.sk >= lo && i.sk <= hi)),
    };
  };

  it('a partial first month: the days before the range move into the level before it, out of the month', () => {
    const range: Range = { start: '2026-02-10', end: '2026-02-28', interval: 'month' };
    const { data, summary } = series(range, foldRange(range, read(range)));
    expect(data).toEqual([
      {
        date: '2026-02-10',
        mrr: '120.00',
        new: '0.00',
        expansion: '0.00',
        contraction: '-30.00',
        churn: '0.00',
        voluntary_churn: '0.00',
        delinquent_churn: '0.00',
        reactivation: '0.00',
        net_change: '-30.00',
        past_due_mrr: '0.00',
        active_subscriptions: 0,
        active_customers: 1,
        arpa: '120.00',
        customer_churn_rate: 0,
        mrr_churn_rate: 20,
        net_mrr_retention: 80,
        gross_mrr_retention: 80,
        unconverted: {},
      },
    ]);
    expect(summary).toEqual({
      current_mrr: '120.00',
      arr: '1440.00',
      arpa: '120.00',
      customer_churn_rate: 0,
      mrr_churn_rate: 20,
      unconverted: {},
    });
  });

  it('what is left unconverted folds as a level per currency, shards and pending moves included', () => {
    const range: Range = { start: '2026-02-01', end: '2026-03-31', interval: 'month' };
    const items = {
      months: [
        { sk: 'M#2026-01#00', uUSD: '100', n: '50' },
        { sk: 'M#2026-02#03', uUSD: '-100', uEUR: '7.5' },
        { sk: 'M#2026-02#05', uEUR: '2.5' },
        { sk: 'M#2026-03#00', uUSD: '40', uEUR: 0 },
      ],
      days: [],
    };
    const { data, summary, unconverted } = series(range, foldRange(range, items));
    expect(data.map((e) => e.unconverted)).toEqual([{ EUR: '10.00' }, { EUR: '10.00', USD: '40.00' }]);
    expect(summary.unconverted).toEqual({ EUR: '10.00', USD: '40.00' });
    expect(unconverted).toEqual(summary.unconverted);
  });

  it('daily: the roll-ups before the first month, each day its own movements; rates null on a zero base', () => {
    const range: Range = { start: '2026-02-02', end: '2026-02-04', interval: 'day' };
    const { data } = series(range, foldRange(range, read(range)));
    expect(data.map((e) => [e.date, e.mrr, e.expansion, e.net_mrr_retention])).toEqual([
      ['2026-02-02', '100.00', '0.00', 100],
      ['2026-02-03', '150.00', '50.00', 150],
      ['2026-02-04', '150.00', '0.00', 100],
    ]);
    const empty: Range = { start: '2025-12-01', end: '2025-12-02', interval: 'day' };
    expect(series(empty, foldRange(empty, read(empty))).data.map((e) => [e.mrr, e.net_mrr_retention, e.arpa])).toEqual([
      ['0.00', null, null],
      ['0.00', null, null],
    ]);
  });

  it('the summary: the last 30 days against the level before them', () => {
    const range = summaryRange('2026-02-28');
    expect(range).toEqual({ start: '2026-01-30', end: '2026-02-28', interval: 'day' });
    const summary = summaryOf(foldRange(range, read(range)));
    expect(summary).toMatchObject({ current_mrr: '120.00', active_customers: 1, quick_ratio: 1.67, net_mrr_churn_rate: -20, ltv: null });
  });
});

describe('ranges asked for', () => {
  it('default to the 12 months ending with the current one', () => {
    expect(resolveRange({}, '2026-05-17')).toEqual({ start: '2025-06-01', end: '2026-05-17', interval: 'month' });
  });

  it('are refused on the parameter at fault, with the limit named', () => {
    expect(refusal(() => resolveRange({ end_date: '2026-05-18' }, '2026-05-17'))).toEqual({
      end_date: ['The end date field must be a date before or equal to today.'],
    });
    expect(refusal(() => resolveRange({ start_date: '2026-05-10', end_date: '2026-05-01' }, '2026-05-17'))).toEqual({
      end_date: ['The end date field must be a date after or equal to the start date.'],
    });
    expect(refusal(() => resolveRange({ start_date: '2024-01-01', interval: 'day' }, '2026-05-17'))).toEqual({
      start_date: ['The range must not have more than 731 days for the day interval.'],
    });
    expect(refusal(() => resolveCohortRange({ start_month: '2023-01' }, '2026-05'))).toEqual({
      start_month: ['The range must not have more than 36 months.'],
    });
  });

  it('are at most 10 years long: ten years after 29 February is 1 March', () => {
    const tooLong = { end_date: ['The range must not be longer than 10 years.'] };
    expect(resolveRange({ start_date: '2024-02-29', end_date: '2034-02-28' }, '2040-01-01').end).toBe('2034-02-28');
    expect(refusal(() => resolveRange({ start_date: '2024-02-29', end_date: '2034-03-01' }, '2040-01-01'))).toEqual(tooLong);
    expect(resolveRange({ start_date: '2016-03-01', end_date: '2026-02-28', interval: 'week' }, '2040-01-01').end).toBe('2026-02-28');
    expect(refusal(() => resolveRange({ start_date: '2016-03-01', end_date: '2026-03-01' }, '2040-01-01'))).toEqual(tooLong);
  });

  it('default back to year 1 at the earliest', () => {
    expect(resolveRange({ end_date: '0001-05-10' }, '2026-05-17').start).toBe('0001-01-01');
    expect(resolveCohortRange({ end_month: '0001-05' }, '2026-05').start).toBe('0001-01');
    expect(resolveCohortRange({ end_month: '2026-02' }, '2026-05').start).toBe('2025-03');
  });
});

describe('cohorts', () => {
  it('sum the shards, start at 100 %, and stop at the current month', () => {
    const range = resolveCohortRange({ start_month: '2026-01', end_month: '2026-04' }, '2026-03');
    const table = cohortTable(range, [
      { sk: '2026-01#2026-01#0', j: 1, sm: '60', ac: 1, m: '60' },
      { sk: '2026-01#2026-01#5', j: 1, sm: '40', ac: 1, m: '40' },
      { sk: '2026-01#2026-02#2', ac: -1, m: '-40' },
      { sk: '2026-01#2026-03#1', m: '15' },
    ]);
    expect(table.map((c) => [c.cohort, c.customers, c.mrr, c.retention.length])).toEqual([
      ['2026-01', 2, '100.00', 3],
      ['2026-02', 0, '0.00', 2],
      ['2026-03', 0, '0.00', 1],
      ['2026-04', 0, '0.00', 0],
    ]);
    expect(table[0].retention).toEqual([
      { month: '2026-01', customers: 2, mrr: '100.00', customer_retention: 100, mrr_retention: 100 },
      { month: '2026-02', customers: 1, mrr: '60.00', customer_retention: 50, mrr_retention: 60 },
      { month: '2026-03', customers: 1, mrr: '75.00', customer_retention: 50, mrr_retention: 75 },
    ]);
    expect(table[1].retention[0]).toEqual({ month: '2026-02', customers: 0, mrr: '0.00', customer_retention: null, mrr_retention: null });
  });
});
