import Decimal from 'decimal.js';

/**
 * A from-scratch reference of docs/metrics.md for the property test, written apart from
 * lib/metrics (no import from it): raw per-customer lines (the subscriptions, recorded events and
 * orders a test sent) → the figures the API must answer. Levels (MRR, active customers and
 * subscriptions, cohort figures) are evaluated directly at each day's or month's end; movements
 * are classified change by change.
 */
/**
 * A point and what it counts under: its plan and cycle (null: none), its currency (absent: the
 * reporting currency) and, on a cancellation, its reason. `x` marks a point outside the segment read
 * (`was`: the flag it had). `t`: a trial (0, not live, no subscription), a subscription line's first
 * point; `d`: past due (its amount counts, the customer is live, not an active subscription).
 */
export type RefPoint = {
  at: string;
  amount: Decimal;
  flag: 'a' | 'p' | 'c' | 't' | 'd' | 'o' | 'g' | 'x';
  was?: RefPoint['flag'];
  plan?: string | null;
  cycle?: string | null;
  currency?: string;
  reason?: string | null;
  /**
   * A change that set no amount (a plan or cycle change alone): the point keeps the line's amount
   * before it (while that is active, in the same currency), else counts this, the amount stated.
   */
  stated?: Decimal;
};
/**
 * `importedEnd`: set by `refSegment` (the imported line's end as the whole sees it); `unconverted`:
 * set by it too, each line in another currency as the amounts it leaves out for want of a rate.
 */
export type RefCustomer = {
  lines: Map<string, RefPoint[]>;
  importedEnd?: string | null;
  unconverted?: Map<string, { at: string; amount: Decimal; currency: string }[]>;
};
/** Exchange rates (currency → month → rate) and the zone whose months pick them. */
export type RefRates = { rates: Map<string, Map<string, string>>; zone: string };
const NO_FX: RefRates = { rates: new Map(), zone: 'UTC' };
type Tags = Pick<RefPoint, 'plan' | 'cycle' | 'currency' | 'reason'>;

const sorted = (pts: RefPoint[]) => [...pts].sort((x, y) => x.at.localeCompare(y.at));

/**
 * Each point that keeps the line's amount, given the amount of the point before it as it now stands
 * (an amount that counts: active or past due).
 */
const settled = (pts: RefPoint[]): RefPoint[] => {
  let before: RefPoint | undefined;
  for (const p of pts) {
    const counting = before !== undefined && (before.flag === 'a' || before.flag === 'd');
    if (p.stated) p.amount = counting && (before!.currency ?? null) === (p.currency ?? null) ? before!.amount : p.stated;
    before = p;
  }
  return pts;
};
/**
 * Subscription changes through the API: the line holds `amount` from `at` on (later points
 * superseded); `keep`: the change set no amount (a plan change alone), the line keeps its own.
 */
export const refSetFrom = (
  c: RefCustomer,
  line: string,
  at: string,
  amount: Decimal.Value,
  flag: RefPoint['flag'],
  tags: Tags = {},
  keep = false,
) => {
  const p: RefPoint = { at, amount: new Decimal(amount), flag, ...tags, ...(keep ? { stated: new Decimal(amount) } : {}) };
  c.lines.set(line, settled(sorted([...(c.lines.get(line) ?? []).filter((q) => q.at < at), p])));
};
/**
 * A trial ended by a cancellation at `at`: the line keeps its trial point (even at the same instant)
 * and is 0 from then on.
 */
export const refEndTrial = (c: RefCustomer, line: string, at: string, tags: Tags = {}) => {
  const [start] = c.lines.get(line) ?? [];
  c.lines.set(line, [...(start ? [start] : []), { at, amount: new Decimal(0), flag: 'c', ...tags }]);
};
/** Recorded events: one point at `at` (replacing one at the same time). */
export const refSetAt = (c: RefCustomer, line: string, at: string, amount: Decimal.Value, flag: RefPoint['flag'], tags: Tags = {}) => {
  c.lines.set(
    line,
    settled(sorted([...(c.lines.get(line) ?? []).filter((p) => p.at !== at), { at, amount: new Decimal(amount), flag, ...tags }])),
  );
};

/** `plans`: any of them (a union of plans). */
export type RefSegment = { plan?: string; plans?: string[]; cycle?: string; currency?: string };
/**
 * The customers as a segment sees them (docs/metrics.md, "Segments"): only the lines in its
 * currency (default the reporting one); the imported line's end taken there; in a plan or cycle
 * segment each point outside it as 0 and neither live nor active nor a cancellation.
 */
/**
 * Renewals of recurring orders, as docs/metrics.md words them: a customer's orders in order of
 * payment (ties by line name); one paid at most `graceDays` days after the end of the previous one's
 * period, and after that end, continues it: the previous share goes on over the gap as past due
 * (`g`) until the renewal starts. The last order's share goes on past its end as past due unless its
 * grace ended before `asOf`, when it ends at the end of its period. Order lines are `O…` lines of two
 * points (its share from paid_at, 0 from the end of its period).
 */
export const refRenewals = (customers: RefCustomer[], graceDays: number, asOf: string): RefCustomer[] =>
  customers.map((c) => {
    const orders = [...c.lines]
      .filter(([line, pts]) => line.startsWith('O') && pts.length === 2)
      .map(([line, [start, end]]) => ({ line, start, end }))
      .sort((a, b) => a.start.at.localeCompare(b.start.at) || (a.line < b.line ? -1 : 1));
    if (!orders.length) return c;
    const lines = new Map(c.lines);
    const plusDays = (t: string, n: number) => `${new Date(Date.parse(t) + n * 86_400_000).toISOString().slice(0, 19)}Z`;
    orders.forEach(({ line, start, end }, i) => {
      const next = orders[i + 1];
      const graceEnd = plusDays(end.at, graceDays);
      const gap = (to?: string): RefPoint[] => [
        start,
        { ...end, amount: start.amount, flag: 'g' },
        ...(to ? [{ ...end, at: to, amount: new Decimal(0), flag: 'o' as const }] : []),
      ];
      if (next) {
        if (next.start.at > end.at && next.start.at <= graceEnd) lines.set(line, gap(next.start.at));
      } else if (!(asOf > graceEnd)) lines.set(line, gap());
    });
    return { ...c, lines };
  });

export const refSegment = (customers: RefCustomer[], seg: RefSegment, reporting = 'TWD', fx: RefRates = NO_FX): RefCustomer[] =>
  customers.map((c) => {
    const currency = seg.currency ?? reporting;
    const matches = (p: RefPoint) =>
      (seg.plan === undefined || p.plan === seg.plan) &&
      (seg.plans === undefined || (p.plan != null && seg.plans.includes(p.plan))) &&
      (seg.cycle === undefined || p.cycle === seg.cycle);
    const inCurrency = new Map<string, RefPoint[]>();
    // The reporting currency's figures: other currencies' points at their (local) month's rate, rounded to 10
    // places half up; a point of a month without a rate counts 0 and is reported as left out.
    const converted = new Map<string, RefPoint[]>();
    const unconverted = new Map<string, { at: string; amount: Decimal; currency: string }[]>();
    for (const [line, pts] of c.lines) {
      const kept = pts.filter((p) => (p.currency ?? reporting) === currency);
      if (kept.length) inCurrency.set(line, kept);
      // A currency segment (the reporting one's too) counts its own lines only, in it.
      if (seg.currency !== undefined) continue;
      const foreign = pts.filter((p) => (p.currency ?? reporting) !== reporting);
      if (!foreign.length) continue;
      const rateOf = (p: RefPoint) => fx.rates.get(p.currency!)?.get(refLocalDate(p.at, fx.zone).slice(0, 7));
      converted.set(
        line,
        foreign.map((p) => {
          const rate = rateOf(p);
          // A point at 0 (a trial, a pause, a cancellation) is 0 in any currency: it needs no rate.
          if (p.flag === 't' || p.amount.isZero()) return p;
          return rate === undefined
            ? { ...p, amount: new Decimal(0), flag: 'x' as const, was: p.flag }
            : { ...p, amount: p.amount.times(rate).toDecimalPlaces(10, Decimal.ROUND_HALF_UP) };
        }),
      );
      unconverted.set(
        line,
        foreign.map((p) => ({
          at: p.at,
          currency: p.currency!,
          amount: rateOf(p) === undefined && matches(p) ? p.amount : new Decimal(0),
        })),
      );
    }
    const importedEnd = refImportedEnd({ lines: inCurrency });
    const out = new Map<string, RefPoint[]>();
    for (const [line, pts] of [...inCurrency, ...converted]) {
      // The imported line's end is a point of its own: 0 from then on, in no plan or cycle.
      const withEnd =
        line === 'I' && importedEnd !== null
          ? [...pts.filter((p) => p.at < importedEnd), { at: importedEnd, amount: new Decimal(0), flag: 'x' as const }]
          : pts;
      out.set(
        line,
        withEnd.map((p) => (matches(p) ? p : { ...p, amount: new Decimal(0), flag: 'x' as const, was: p.was ?? p.flag })),
      );
    }
    return { lines: out, importedEnd: null, unconverted };
  });

/** The state of a line at `t` (inclusive) or just before it (`strict`). */
const pointAt = (pts: RefPoint[], t: string, strict: boolean): RefPoint | null => {
  let found: RefPoint | null = null;
  for (const p of pts) if (strict ? p.at < t : p.at <= t) found = p;
  return found;
};

/** When the customer's first subscription line starts: its imported line ('I') counts only before then. */
export const refImportedEnd = (c: RefCustomer): string | null => {
  if (c.importedEnd !== undefined) return c.importedEnd;
  const starts = [...c.lines].filter(([line, pts]) => line.startsWith('S') && pts.length).map(([, pts]) => pts[0].at);
  return starts.length ? starts.sort()[0] : null;
};

/** A customer at `t`: its MRR, whether a line makes it live (active, paused, past due), its active subscriptions, its MRR past due. */
export const customerAt = (c: RefCustomer, t: string, strict = false) => {
  let mrr = new Decimal(0);
  let live = false;
  let subs = 0;
  let pastDue = new Decimal(0);
  const importedEnd = refImportedEnd(c);
  for (const [line, pts] of c.lines) {
    if (line === 'I' && importedEnd !== null && (strict ? t > importedEnd : t >= importedEnd)) continue;
    const p = pointAt(pts, t, strict);
    if (!p) continue;
    mrr = mrr.plus(p.amount);
    if (p.flag === 'a' || p.flag === 'p' || p.flag === 'd') live = true;
    if (p.flag === 'a' && line.startsWith('S')) subs++;
    if (p.flag === 'd' || p.flag === 'g') pastDue = pastDue.plus(p.amount);
  }
  return { mrr, live, subs, pastDue };
};

/**
 * The cancellations at `t` (lines with a `c` point then), the one that took the most MRR (the amount
 * just before) first, then by line name; each with its reason.
 */
const cancellationsAt = (c: RefCustomer, t: string) =>
  [...c.lines]
    .filter(([, pts]) => pts.some((p) => p.at === t && p.flag === 'c'))
    .map(([line, pts]) => ({
      line,
      took: pointAt(pts, t, true)?.amount ?? new Decimal(0),
      reason: pts.filter((p) => p.at === t).at(-1)!.reason ?? null,
    }))
    .sort((a, b) => b.took.comparedTo(a.took) || (a.line < b.line ? -1 : 1));

const changeTimes = (c: RefCustomer) => [...new Set([...c.lines.values()].flat().map((p) => p.at))].sort();

/** `delinquent`: the part of `churn` whose cancellation (the one taking the most) was a delinquent one. */
export type DayMoves = {
  new: Decimal;
  expansion: Decimal;
  contraction: Decimal;
  churn: Decimal;
  reactivation: Decimal;
  delinquent: Decimal;
  churned: number;
};
const zeroMoves = (): DayMoves => ({
  new: new Decimal(0),
  expansion: new Decimal(0),
  contraction: new Decimal(0),
  churn: new Decimal(0),
  reactivation: new Decimal(0),
  delinquent: new Decimal(0),
  churned: 0,
});
/** The reason of a past-due subscription's own cancellation. */
export const DELINQUENT = 'delinquent';

/**
 * The local date of a UTC instant in `zone`, as Intl formats it; and a local day's last second, found
 * by stepping quarter-hours from UTC midnight (every zone in use moves its days on one). Neither
 * shares code with lib/shared/zone.
 */
const formats = new Map<string, Intl.DateTimeFormat>();
export const refLocalDate = (t: string, zone: string) => {
  if (zone === 'UTC') return t.slice(0, 10);
  let f = formats.get(zone);
  if (!f) formats.set(zone, (f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })));
  return f.format(new Date(t));
};
const QUARTER_MS = 900_000;
const isoSeconds = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;
const endOf = (day: string, zone: string) => {
  if (zone === 'UTC') return `${day}T23:59:59Z`;
  const next = addDays(day, 1);
  // The local day `next` starts between 15 hours before and after its UTC midnight.
  let u = Date.parse(`${next}T00:00:00Z`) - 15 * 3_600_000;
  while (refLocalDate(isoSeconds(u), zone) < next) u += QUARTER_MS;
  return isoSeconds(u - 1000);
};

/** Movements per day of `zone` over all customers, classified change by change. */
export const dayMoves = (customers: RefCustomer[], zone = 'UTC') => {
  const out = new Map<string, DayMoves>();
  for (const c of customers) {
    let seenPositive = false;
    for (const t of changeTimes(c)) {
      const before = customerAt(c, t, true);
      const after = customerAt(c, t);
      const day = refLocalDate(t, zone);
      const m = out.get(day) ?? zeroMoves();
      const delta = after.mrr.minus(before.mrr);
      if (!delta.isZero()) {
        if (before.mrr.isZero()) m[seenPositive ? 'reactivation' : 'new'] = m[seenPositive ? 'reactivation' : 'new'].plus(delta);
        else if (after.mrr.isZero()) {
          m.churn = m.churn.plus(delta);
          if (cancellationsAt(c, t)[0]?.reason === DELINQUENT) m.delinquent = m.delinquent.plus(delta);
        } else if (delta.gt(0)) m.expansion = m.expansion.plus(delta);
        else m.contraction = m.contraction.plus(delta);
      }
      const cancelledNow = [...c.lines.values()].some((pts) => pts.some((p) => p.at === t && p.flag === 'c'));
      if (before.live && !after.live && cancelledNow) m.churned++;
      if (after.mrr.gt(0)) seenPositive = true;
      out.set(day, m);
    }
  }
  return out;
};

/**
 * GET /metrics/movements from scratch: each change of a customer's MRR (by index in `customers`)
 * dated on a day of `zone` in [start, end] and before `now`, classified as `dayMoves` classifies it.
 */
export const refMovements = (customers: RefCustomer[], start: string, end: string, zone: string, now: string) => {
  const out: { customer: number; at: string; type: keyof Omit<DayMoves, 'churned'> }[] = [];
  customers.forEach((c, customer) => {
    let seenPositive = false;
    for (const t of changeTimes(c)) {
      const before = customerAt(c, t, true).mrr;
      const after = customerAt(c, t).mrr;
      const day = refLocalDate(t, zone);
      if (!after.minus(before).isZero() && t <= now && day >= start && day <= end) {
        const type = before.isZero()
          ? seenPositive
            ? 'reactivation'
            : 'new'
          : after.isZero()
            ? 'churn'
            : after.gt(before)
              ? 'expansion'
              : 'contraction';
        out.push({ customer, at: t, type });
      }
      if (after.gt(0)) seenPositive = true;
    }
  });
  return out;
};

const DAY_MS = 86_400_000;
export const addDays = (day: string, n: number) => new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const money = (d: Decimal) => d.toFixed(2);
/** A number as the JSON answer carries it: a negative rounding to zero (-0) is written 0. */
const onWire = (n: number) => (n === 0 ? 0 : n);
const pct = (part: Decimal, base: Decimal) => (base.isZero() ? null : onWire(Number(part.div(base).times(100).toFixed(2))));

/** Level at the end of `day` (inclusive), evaluated directly. */
const levelAt = (customers: RefCustomer[], t: string) => {
  let mrr = new Decimal(0);
  let active = 0;
  let subs = 0;
  let pastDue = new Decimal(0);
  for (const c of customers) {
    const s = customerAt(c, t);
    mrr = mrr.plus(s.mrr);
    if (s.mrr.gt(0)) active++;
    subs += s.subs;
    pastDue = pastDue.plus(s.pastDue);
  }
  return { mrr, active, subs, pastDue };
};

/** What the figures leave out for want of a rate at `t` (inclusive), per currency, 2 decimals; none left out: not named. */
const unconvertedAt = (customers: RefCustomer[], t: string) => {
  const sums = new Map<string, Decimal>();
  for (const c of customers)
    for (const pts of c.unconverted?.values() ?? []) {
      let p: (typeof pts)[number] | null = null;
      for (const q of pts) if (q.at <= t) p = q;
      if (p && !p.amount.isZero()) sums.set(p.currency, (sums.get(p.currency) ?? new Decimal(0)).plus(p.amount));
    }
  return Object.fromEntries(
    [...sums]
      .filter(([, v]) => !v.isZero())
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => [k, money(v)]),
  );
};

export type RefInterval = 'day' | 'week' | 'month' | 'quarter' | 'year';

export const bucketOf = (day: string, interval: RefInterval) => {
  if (interval === 'day') return day;
  if (interval === 'month') return day.slice(0, 7);
  if (interval === 'year') return day.slice(0, 4);
  if (interval === 'quarter')
    return `${day.slice(0, 4)}/${['1', '1', '1', '2', '2', '2', '3', '3', '3', '4', '4', '4'][Number(day.slice(5, 7)) - 1]}`;
  const dow = new Date(`${day}T00:00:00Z`).getUTCDay();
  return addDays(day, -((dow + 6) % 7));
};

/** The buckets of [start, end]: each's first and last day in the range, and its days' figures added up. */
const bucketsOf = <T>(start: string, end: string, interval: RefInterval, zero: () => T, add: (into: T, day: string) => void) => {
  const buckets: { key: string; date: string; last: string; m: T }[] = [];
  for (let d = start; d <= end; d = addDays(d, 1)) {
    const key = bucketOf(d, interval);
    if (buckets.at(-1)?.key !== key) buckets.push({ key, date: d, last: d, m: zero() });
    const b = buckets.at(-1)!;
    b.last = d;
    add(b.m, d);
  }
  return buckets;
};

/** GET /metrics/mrr as docs/metrics.md defines it, from scratch. */
export const expectedSeries = (customers: RefCustomer[], start: string, end: string, interval: RefInterval, zone = 'UTC') => {
  const moves = dayMoves(customers, zone);
  const buckets = bucketsOf(start, end, interval, zeroMoves, (m, d) => {
    const dm = moves.get(d);
    if (dm)
      for (const k of Object.keys(dm) as (keyof DayMoves)[])
        (m as any)[k] = k === 'churned' ? m.churned + dm.churned : (m[k] as Decimal).plus(dm[k] as Decimal);
  });
  const data = buckets.map((b) => {
    const level = levelAt(customers, endOf(b.last, zone));
    // The bucket's rates are against the levels at the end of the day before its first.
    const before = levelAt(customers, endOf(addDays(b.date, -1), zone));
    const net = b.m.new.plus(b.m.expansion).plus(b.m.contraction).plus(b.m.churn).plus(b.m.reactivation);
    const lost = b.m.churn.abs().plus(b.m.contraction.abs());
    return {
      date: b.date,
      mrr: money(level.mrr),
      new: money(b.m.new),
      expansion: money(b.m.expansion),
      contraction: money(b.m.contraction),
      churn: money(b.m.churn),
      voluntary_churn: money(b.m.churn.minus(b.m.delinquent)),
      delinquent_churn: money(b.m.delinquent),
      reactivation: money(b.m.reactivation),
      net_change: money(net),
      past_due_mrr: money(level.pastDue),
      active_subscriptions: level.subs,
      active_customers: level.active,
      arpa: level.active ? money(level.mrr.div(level.active)) : null,
      customer_churn_rate: pct(new Decimal(b.m.churned), new Decimal(before.active)),
      mrr_churn_rate: pct(lost, before.mrr),
      net_mrr_retention: pct(before.mrr.minus(lost).plus(b.m.expansion), before.mrr),
      gross_mrr_retention: pct(before.mrr.minus(lost), before.mrr),
      unconverted: unconvertedAt(customers, endOf(b.last, zone)),
    };
  });
  const startLevel = levelAt(customers, endOf(addDays(start, -1), zone));
  const endLevel = levelAt(customers, endOf(end, zone));
  const total = zeroMoves();
  for (const b of buckets) {
    total.churned += b.m.churned;
    total.churn = total.churn.plus(b.m.churn);
    total.contraction = total.contraction.plus(b.m.contraction);
    total.expansion = total.expansion.plus(b.m.expansion);
    total.reactivation = total.reactivation.plus(b.m.reactivation);
    total.new = total.new.plus(b.m.new);
  }
  const summary = {
    current_mrr: money(endLevel.mrr),
    arr: money(endLevel.mrr.times(12)),
    arpa: endLevel.active ? money(endLevel.mrr.div(endLevel.active)) : null,
    customer_churn_rate: pct(new Decimal(total.churned), new Decimal(startLevel.active)),
    mrr_churn_rate: pct(total.churn.abs().plus(total.contraction.abs()), startLevel.mrr),
    unconverted: unconvertedAt(customers, endOf(end, zone)),
  };
  return { data, summary, total, startLevel, endLevel };
};

/** GET /metrics/summary on `today`: the last 30 days. */
export const expectedSummary = (customers: RefCustomer[], today: string, zone = 'UTC') => {
  const { summary, total, startLevel, endLevel } = expectedSeries(customers, addDays(today, -29), today, 'day', zone);
  const gained = total.new.plus(total.expansion).plus(total.reactivation);
  const lost = total.contraction.plus(total.churn).abs();
  return {
    current_mrr: summary.current_mrr,
    arr: summary.arr,
    arpa: summary.arpa,
    active_subscriptions: endLevel.subs,
    active_customers: endLevel.active,
    customer_churn_rate: summary.customer_churn_rate,
    mrr_churn_rate: summary.mrr_churn_rate,
    net_mrr_churn_rate: pct(lost.minus(total.expansion).minus(total.reactivation), startLevel.mrr),
    quick_ratio: lost.isZero() ? null : Number(gained.div(lost).toFixed(2)),
    ltv:
      total.churned === 0 || startLevel.active === 0 || endLevel.active === 0
        ? null
        : money(endLevel.mrr.div(endLevel.active).div(new Decimal(total.churned).div(startLevel.active))),
    unconverted: summary.unconverted,
  };
};

const nextMonth = (m: string) => {
  const [y, mo] = m.split('-').map(Number);
  return mo === 12 ? `${String(y + 1).padStart(4, '0')}-01` : `${String(y).padStart(4, '0')}-${String(mo + 1).padStart(2, '0')}`;
};
const monthEnd = (m: string, zone: string) => endOf(addDays(`${nextMonth(m)}-01`, -1), zone);

/** GET /metrics/cohorts: cohort = the month a customer's MRR first went above 0; figures at each month's end. */
export const expectedCohorts = (customers: RefCustomer[], start: string, end: string, current: string, zone = 'UTC') => {
  const cohortOf = (c: RefCustomer) => {
    const joined = changeTimes(c).find((t) => customerAt(c, t).mrr.gt(0));
    return joined === undefined ? null : refLocalDate(joined, zone).slice(0, 7);
  };
  const last = end < current ? end : current;
  const out = [];
  for (let m = start; m <= end; m = nextMonth(m)) {
    const members = customers.filter((c) => cohortOf(c) === m);
    // Each member right after its MRR first went above 0.
    const joinedAt = (c: RefCustomer) => changeTimes(c).find((t) => customerAt(c, t).mrr.gt(0))!;
    const base = members.reduce((acc, c) => acc.plus(customerAt(c, joinedAt(c)).mrr), new Decimal(0));
    const retention = [];
    for (let r = m; r <= last; r = nextMonth(r)) {
      const values = members.map((c) => customerAt(c, r === m ? joinedAt(c) : monthEnd(r, zone)).mrr);
      const active = values.filter((v) => v.gt(0)).length;
      const mrr = values.reduce((a, v) => a.plus(v), new Decimal(0));
      retention.push({
        month: r,
        customers: active,
        mrr: money(mrr),
        customer_retention: pct(new Decimal(active), new Decimal(members.length)),
        mrr_retention: pct(mrr, base),
      });
    }
    out.push({ cohort: m, customers: members.length, mrr: money(base), retention });
  }
  return out;
};

/**
 * GET /metrics/churn-reasons over [start, end] (UTC days), from scratch: at each change of a
 * customer with a cancellation, the reason of the cancelled line that held the most just before
 * (then the first by name); its churn (MRR to 0) and its customer churn (no live line left).
 */
export const expectedChurnReasons = (customers: RefCustomer[], start: string, end: string, zone = 'UTC') => {
  const by = new Map<string, { mrr: Decimal; customers: number }>();
  for (const c of customers) {
    for (const t of changeTimes(c)) {
      const day = refLocalDate(t, zone);
      if (day < start || day > end) continue;
      const cancelled = cancellationsAt(c, t);
      if (!cancelled.length) continue;
      const before = customerAt(c, t, true);
      const after = customerAt(c, t);
      const churn = before.mrr.gt(0) && after.mrr.isZero();
      const churned = before.live && !after.live;
      if (!churn && !churned) continue;
      const key = cancelled[0].reason ?? '';
      const r = by.get(key) ?? { mrr: new Decimal(0), customers: 0 };
      if (churn) r.mrr = r.mrr.plus(before.mrr);
      if (churned) r.customers++;
      by.set(key, r);
    }
  }
  return [...by]
    .map(([reason, r]) => ({ reason: reason === '' ? null : reason, churned_mrr: money(r.mrr), churned_customers: r.customers }))
    .filter((r) => r.churned_mrr !== '0.00' || r.churned_customers > 0)
    .sort(
      (a, b) =>
        new Decimal(b.churned_mrr).comparedTo(a.churned_mrr) ||
        b.churned_customers - a.churned_customers ||
        String(a.reason).localeCompare(String(b.reason)),
    );
};

/**
 * GET /metrics/trials from scratch: each trial (a subscription line whose first point is `t`, in the
 * segment read) counts in the bucket of the local day it started; what became of it by now is the
 * line's next point as written (`was`, whatever the segment or a missing rate made of it): a
 * cancellation ends it unconverted, anything else is its conversion; no next point, still trialing.
 */
export const expectedTrials = (customers: RefCustomer[], start: string, end: string, interval: RefInterval, zone = 'UTC') => {
  type Acc = { started: number; converted: number; cancelled: number; seconds: Decimal };
  const zero = (): Acc => ({ started: 0, converted: 0, cancelled: 0, seconds: new Decimal(0) });
  const byDay = new Map<string, Acc>();
  for (const c of customers)
    for (const [line, pts] of c.lines) {
      const [first, next] = pts;
      if (!line.startsWith('S') || first?.flag !== 't') continue;
      const day = refLocalDate(first.at, zone);
      const acc = byDay.get(day) ?? zero();
      acc.started++;
      if (next && (next.was ?? next.flag) === 'c') acc.cancelled++;
      else if (next) {
        acc.converted++;
        acc.seconds = acc.seconds.plus((Date.parse(next.at) - Date.parse(first.at)) / 1000);
      }
      byDay.set(day, acc);
    }
  const add = (into: Acc, a: Acc | undefined) => {
    if (!a) return;
    into.started += a.started;
    into.converted += a.converted;
    into.cancelled += a.cancelled;
    into.seconds = into.seconds.plus(a.seconds);
  };
  const figures = (a: Acc) => {
    const still = a.started - a.converted - a.cancelled;
    return {
      trials_started: a.started,
      converted: a.converted,
      cancelled: a.cancelled,
      still_trialing: still,
      conversion_rate: pct(new Decimal(a.converted), new Decimal(a.started - still)),
      avg_days_to_convert: a.converted
        ? Number(a.seconds.div(a.converted).div(86_400).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2))
        : null,
    };
  };
  const buckets = bucketsOf(start, end, interval, zero, (m, d) => add(m, byDay.get(d)));
  const all = zero();
  for (const b of buckets) add(all, b.m);
  return { data: buckets.map((b) => ({ date: b.date, ...figures(b.m) })), summary: figures(all) };
};

/**
 * GET /metrics/recovery from scratch, line by line as the segment sees it: a past-due episode starts
 * where a line turns `d` (its amount then); it ends recovered where the line goes from `d` to active,
 * churned where a delinquent cancellation follows `d` (each with the amount it had past due); any
 * other end (a cancellation of another reason, leaving the segment) is neither. Each in the bucket
 * of its local day.
 */
export const expectedRecovery = (customers: RefCustomer[], start: string, end: string, interval: RefInterval, zone = 'UTC') => {
  type Episodes = { mrr: Decimal; subscriptions: number };
  type Acc = { started: Episodes; recovered: Episodes; churned: Episodes };
  const none = (): Episodes => ({ mrr: new Decimal(0), subscriptions: 0 });
  const zero = (): Acc => ({ started: none(), recovered: none(), churned: none() });
  const byDay = new Map<string, Acc>();
  const count = (at: string, what: keyof Acc, amount: Decimal) => {
    const day = refLocalDate(at, zone);
    const acc = byDay.get(day) ?? zero();
    acc[what].mrr = acc[what].mrr.plus(amount);
    acc[what].subscriptions++;
    byDay.set(day, acc);
  };
  for (const c of customers)
    for (const [line, pts] of c.lines) {
      if (!line.startsWith('S')) continue;
      pts.forEach((p, i) => {
        const prev = pts[i - 1];
        if (p.flag === 'd' && prev?.flag !== 'd') count(p.at, 'started', p.amount);
        if (prev?.flag !== 'd') return;
        if (p.flag === 'a') count(p.at, 'recovered', prev.amount);
        if (p.flag === 'c' && p.reason === DELINQUENT) count(p.at, 'churned', prev.amount);
      });
    }
  const add = (into: Acc, a: Acc | undefined) => {
    if (!a) return;
    for (const k of ['started', 'recovered', 'churned'] as const) {
      into[k].mrr = into[k].mrr.plus(a[k].mrr);
      into[k].subscriptions += a[k].subscriptions;
    }
  };
  const out = (e: Episodes) => ({ mrr: money(e.mrr), subscriptions: e.subscriptions });
  const figures = (a: Acc) => ({
    past_due_started: out(a.started),
    recovered: out(a.recovered),
    churned: out(a.churned),
    recovery_rate: pct(new Decimal(a.recovered.subscriptions), new Decimal(a.recovered.subscriptions + a.churned.subscriptions)),
  });
  const buckets = bucketsOf(start, end, interval, zero, (m, d) => add(m, byDay.get(d)));
  const all = zero();
  for (const b of buckets) add(all, b.m);
  return { data: buckets.map((b) => ({ date: b.date, ...figures(b.m) })), summary: figures(all) };
};
