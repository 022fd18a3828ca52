import { describe, expect, it } from 'vitest';
import { contributions, orderLine, renewalGraceEnd, type Timeline, withRenewals } from '#lib/metrics/timeline';

const CCY = 'TWD';
const monthly = (paid_at: string, amount = '300', currency = CCY) =>
  orderLine({ status: 'paid', amount, currency, billing_cycle: 'monthly', paid_at });
const figure = (tl: Timeline, item: string, attr: string) => contributions(tl, CCY).get(item)?.get(attr)?.toFixed() ?? '0';

describe('renewals of recurring orders (withRenewals)', () => {
  it('a renewal paid within the grace continues the line: the gap is past due, no churn, no reactivation', () => {
    const tl = withRenewals({ OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-02-06T00:00:00Z') }, 30, '2026-03-01T00:00:00Z');
    expect(tl.OA.map((p) => [p[0], p[1], p[2]])).toEqual([
      ['2026-01-01T00:00:00Z', '300', 'o'],
      ['2026-02-01T00:00:00Z', '300', 'g'],
      ['2026-02-06T00:00:00Z', '0', 'o'],
    ]);
    expect(figure(tl, 'M#2026-02', 'churn')).toBe('0');
    expect(figure(tl, 'M#2026-02', 'reactivation')).toBe('0');
    // Past due from the end of the period to the renewal: up, then down again within February.
    expect(figure(tl, 'D#2026-02-01', 'past_due')).toBe('300');
    expect(figure(tl, 'D#2026-02-06', 'past_due')).toBe('-300');
  });

  it('a renewal at another amount is an expansion or a contraction', () => {
    const up = withRenewals(
      { OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-02-10T00:00:00Z', '450') },
      30,
      '2026-03-01T00:00:00Z',
    );
    expect(figure(up, 'D#2026-02-10', 'expansion')).toBe('150');
    const down = withRenewals(
      { OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-02-10T00:00:00Z', '100') },
      30,
      '2026-03-01T00:00:00Z',
    );
    expect(figure(down, 'D#2026-02-10', 'contraction')).toBe('-200');
  });

  it('a renewal past the grace: churn at the end of the paid period, reactivation at the renewal', () => {
    const tl = withRenewals({ OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-03-05T00:00:00Z') }, 30, '2026-04-01T00:00:00Z');
    expect(figure(tl, 'D#2026-02-01', 'churn')).toBe('-300');
    expect(figure(tl, 'D#2026-03-05', 'reactivation')).toBe('300');
    // …and within a longer grace, the same orders are one line.
    const longer = withRenewals({ OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-03-05T00:00:00Z') }, 40, '2026-04-01T00:00:00Z');
    expect(figure(longer, 'M#2026-02', 'churn')).toBe('0');
    expect(figure(longer, 'M#2026-03', 'reactivation')).toBe('0');
  });

  it("the last order's period over: past due while its grace runs, then restated as churn at the end of the period", () => {
    const raw = { OA: monthly('2026-01-01T00:00:00Z') };
    const running = withRenewals(raw, 30, '2026-02-20T00:00:00Z');
    expect(running.OA.at(-1)!.slice(0, 3)).toEqual(['2026-02-01T00:00:00Z', '300', 'g']);
    expect(figure(running, 'M#2026-02', 'churn')).toBe('0');
    expect(renewalGraceEnd(running, 30, '2026-02-20T00:00:00Z')).toBe('2026-03-03T00:00:00Z');
    // At the grace's very end the renewal may still come; a second later it has run out.
    expect(withRenewals(raw, 30, '2026-03-03T00:00:00Z')).toEqual(running);
    const over = withRenewals(running, 30, '2026-03-03T00:00:01Z');
    expect(over.OA.map((p) => [p[0], p[1], p[2]])).toEqual([
      ['2026-01-01T00:00:00Z', '300', 'o'],
      ['2026-02-01T00:00:00Z', '0', 'o'],
    ]);
    expect(figure(over, 'D#2026-02-01', 'churn')).toBe('-300');
    expect(renewalGraceEnd(over, 30, '2026-03-03T00:00:01Z')).toBeNull();
  });

  it('is derived from each line as orderLine made it, whatever order the orders arrive in (idempotent)', () => {
    const a = monthly('2026-01-01T00:00:00Z');
    const b = monthly('2026-02-06T00:00:00Z', '200');
    const c = monthly('2026-03-20T00:00:00Z', '200', 'USD');
    const asOf = '2026-06-01T00:00:00Z';
    const all = withRenewals({ OA: a, OB: b, OC: c }, 30, asOf);
    // B first, then A, then C, each written over what the last write stored.
    const step1 = withRenewals({ OB: b }, 30, asOf);
    const step2 = withRenewals({ ...step1, OA: a }, 30, asOf);
    const step3 = withRenewals({ ...step2, OC: c }, 30, asOf);
    expect(step3).toEqual(all);
    expect(withRenewals(all, 30, asOf)).toBe(all);
    // Refunding B (its line gone) leaves A's period ending on its own: a gap past the grace to C.
    const { OB: _gone, ...without } = all;
    const refunded = withRenewals(without, 30, asOf);
    expect(refunded.OA.map((p) => p[2])).toEqual(['o', 'o']);
  });

  it('an early renewal (paid before the period ended) leaves both lines as they are', () => {
    const raw = { OA: monthly('2026-01-01T00:00:00Z'), OB: monthly('2026-01-25T00:00:00Z') };
    const tl = withRenewals(raw, 30, '2026-01-26T00:00:00Z');
    expect(tl.OA).toEqual(raw.OA);
  });
});
