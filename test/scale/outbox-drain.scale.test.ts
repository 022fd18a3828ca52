import type { PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { WriteSet } from '#lib/db/writes';
import { createMerchant } from '#lib/merchants/service';
import type { Publish } from '#lib/outbox/relay';
import { addOutboxEvent, OUTBOX_SHARD_LIST, OUTBOX_TTL_SECONDS, pendingMarkPages } from '#lib/outbox/store';
import { SWEEP_FUNCTION_TIMEOUT_SECONDS, SWEEP_INTERVAL_MINUTES, sweepOutbox } from '#lib/outbox/sweeper';
import { inTurn } from '#lib/shared/in-turn';
import { formatTimestamp } from '#lib/shared/time';
import { seededRandom } from '../support/faults.ts';
import { detailOf } from '../outbox/support/records.ts';

/**
 * A 30-hour backlog at 600 events/s (64.8 M outbox items) drained by the sweeper against a bus
 * that throttles above its quota. Too many items to write here, so the real sweeper runs against a
 * scaled backlog (several merchants, one holding half of it) and a scaled quota, its runs a few
 * wall-clock seconds apart on the injected clock's 5 minutes; what it publishes per run and per
 * merchant is measured, and the full backlog's drain time is derived from the measured share of
 * the quota it turns into published events (docs/scale.md, "The outbox backlog").
 */
const HOUR = 3_600_000;
const MINUTE = 60_000;
const RECOVERY = Date.parse('2026-04-02T06:00:00Z');
const OUTAGE_MS = 30 * HOUR;

/** The real backlog, and what the account's PutEvents quota leaves the sweeper. */
const REAL = {
  eventsPerSecond: 600,
  backlog: 600 * 30 * 3600,
  /** PutEvents entries a second in us-east-1 (us-east-2: 2,400), each entry counted (a pessimistic reading of the quota). */
  quota: 10_000,
  quotaSmallRegion: 2_400,
};

/** The scaled backlog: one hot merchant with two thirds of the events (two pages a shard), eight with an equal share of the rest. */
const HOT_EVENTS = 3_200;
const SMALL = 8;
const SMALL_EVENTS = 200;
const BACKLOG = HOT_EVENTS + SMALL * SMALL_EVENTS;
/** The scaled quota (entries a wall-clock second, a burst of one second) and a run's wall-clock length. */
const QUOTA = 100;
const RUN_MS = 3_000;
/**
 * Marks a shard publishes in a turn, scaled with the quota: on AWS a turn (16 pages of 100) is
 * under 0.1 % of a run's 2.4 M entries; here 16 × 4 is a fifth of a run's 300, so a run holds
 * several turns and a small merchant's backlog takes a few (at 100, one turn would drain a small
 * merchant whole and who finished first would be the token race's doing, not the sweeper's).
 */
const PAGE_SIZE = 4;
const MAX_RUNS = 40;

afterEach(() => resetClock());

/**
 * A PutEvents double holding EventBridge's quota as a token bucket (refilled by the wall clock):
 * a call finding no token is refused whole (ThrottlingException); one finding fewer tokens than
 * entries gets the first ones accepted and the rest back as ThrottlingException entries.
 */
const throttlingBus = (entriesPerSecond: number) => {
  let tokens = entriesPerSecond;
  let at = performance.now();
  const received: { id: string; merchant: string; created: string; at: number }[] = [];
  const counts = { calls: 0, refusedCalls: 0, refusedEntries: 0 };
  let clockNow = 0;
  const publish: Publish = async (entries: PutEventsRequestEntry[]) => {
    counts.calls++;
    const t = performance.now();
    tokens = Math.min(entriesPerSecond, tokens + ((t - at) / 1000) * entriesPerSecond);
    at = t;
    if (tokens < 1) {
      counts.refusedCalls++;
      throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    }
    const accepted = Math.min(entries.length, Math.floor(tokens));
    tokens -= accepted;
    const results = entries.map((e, i) => {
      if (i >= accepted) return { ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded' };
      const d = detailOf(e);
      received.push({ id: d.id, merchant: d.merchant_id, created: d.created_at, at: clockNow });
      return { EventId: `eb-${received.length}` };
    });
    counts.refusedEntries += entries.length - accepted;
    return { FailedEntryCount: entries.length - accepted, Entries: results };
  };
  return { publish, received, counts, setClock: (t: number) => void (clockNow = t) };
};

/** Writes `n` events of a merchant spread evenly over the outage (oldest 30 h before recovery), 50 to a transaction. */
const writeBacklog = async (merchantId: string, n: number) => {
  const ids: string[] = [];
  const sets: WriteSet[] = [];
  for (let i = 0; i < n; i += 50) {
    const ws = new WriteSet();
    for (let j = i; j < Math.min(n, i + 50); j++) {
      const at = formatTimestamp(new Date(RECOVERY - OUTAGE_MS + Math.floor((j / n) * (OUTAGE_MS - 20 * MINUTE))));
      ids.push(addOutboxEvent(ws, merchantId, 'order.created', { order_no: `B-${j}` }, at));
    }
    sets.push(ws);
  }
  await inTurn(sets, 4, (ws) => ws.commit());
  return ids;
};

describe('the outbox sweeper drains a 30-hour backlog against a throttling bus', { timeout: 600_000 }, () => {
  it('publishes every item before its TTL, drains equal merchants at an equal pace wherever they stand, and uses most of the quota', async () => {
    const clock = fixedClock(new Date(RECOVERY).toISOString());
    const merchants = await Promise.all(
      Array.from({ length: SMALL + 1 }, async (_, i) => (await createMerchant(i ? `Small ${i}` : 'Hot')).merchant_id),
    );
    const [hot, ...small] = merchants;
    const written = Date.now();
    const backlog = new Map<string, string[]>();
    backlog.set(hot, await writeBacklog(hot, HOT_EVENTS));
    for (const m of small) backlog.set(m, await writeBacklog(m, SMALL_EVENTS));
    const writeSeconds = (Date.now() - written) / 1000;

    const bus = throttlingBus(QUOTA);
    const random = seededRandom(7);
    const directory = async function* () {
      yield merchants;
    };
    const seen = new Set<string>();
    const left = new Map(merchants.map((m) => [m, backlog.get(m)!.length]));
    /** Per run: wall ms, entries published, and per merchant the events published for the first time. */
    const runs: { ms: number; published: number; byMerchant: Map<string, number> }[] = [];
    for (let run = 0; run < MAX_RUNS && [...left.values()].some((n) => n > 0); run++) {
      const t = RECOVERY + run * SWEEP_INTERVAL_MINUTES * MINUTE;
      clock.set(new Date(t).toISOString());
      bus.setClock(t);
      const from = bus.received.length;
      const started = Date.now();
      const deadline = started + RUN_MS;
      // Each run as the scheduled function runs it: its deadline (no turn starts and no pause ends past
      // it), a random start in the directory. Its DynamoDB requests are not cut at it: a turn takes
      // DynamoDB Local far longer than AWS, against a run scaled down from 4 minutes.
      await sweepOutbox({ publish: bus.publish, merchants: directory(), random, deadline, pageSize: PAGE_SIZE });
      const byMerchant = new Map<string, number>();
      for (const r of bus.received.slice(from)) {
        if (seen.has(r.id)) continue;
        seen.add(r.id);
        byMerchant.set(r.merchant, (byMerchant.get(r.merchant) ?? 0) + 1);
        left.set(r.merchant, left.get(r.merchant)! - 1);
      }
      runs.push({ ms: Math.max(RUN_MS, Date.now() - started), published: bus.received.length - from, byMerchant });
    }

    // Every event published (receivers dedupe on the id), each before its TTL on the injected clock.
    const expected = [...backlog.values()].flat().sort();
    expect([...seen].sort()).toEqual(expected);
    for (const r of bus.received) expect(r.at, r.id).toBeLessThan(Date.parse(r.created) + OUTBOX_TTL_SECONDS * 1000);
    for (const m of merchants)
      for (const s of OUTBOX_SHARD_LIST)
        for await (const page of pendingMarkPages(m, s, '0', '9999')) expect(page, `${m} ${s}`).toEqual([]);
    expect(bus.counts.refusedCalls + bus.counts.refusedEntries, 'the bus throttled').toBeGreaterThan(0);

    const finishedAt = merchants.map((m) => runs.findIndex((_, i) => leftAfter(runs, i, m, backlog) === 0));
    // The measured share of the quota turned into published events, per run slot.
    const drained = runs.reduce((n, r) => n + r.published, 0);
    const slots = runs.reduce((n, r) => n + r.ms, 0) / 1000;
    const efficiency = drained / (slots * QUOTA);
    // The derived drain of the real backlog: what the quota leaves after live traffic, used at the
    // measured efficiency for the run's share of each interval.
    const duty = SWEEP_FUNCTION_TIMEOUT_SECONDS / (SWEEP_INTERVAL_MINUTES * 60);
    const drainHours = (quota: number) => REAL.backlog / (efficiency * (quota - REAL.eventsPerSecond) * duty) / 3600;
    console.info(
      `[outbox drain] scaled backlog ${BACKLOG} events (hot ${HOT_EVENTS}, ${SMALL} × ${SMALL_EVENTS}), written in ${writeSeconds.toFixed(1)} s; ` +
        `quota ${QUOTA} entries/s, runs of ${RUN_MS} ms: ${runs.length} runs, ${drained} entries published (${drained - BACKLOG} again), ` +
        `${bus.counts.calls} PutEvents calls (${bus.counts.refusedCalls} refused whole, ${bus.counts.refusedEntries} entries refused); ` +
        `per run ${runs.map((r) => r.published).join(' ')}; efficiency ${(efficiency * 100).toFixed(1)} % of the quota; ` +
        `small merchants drained by run ${JSON.stringify(finishedAt.slice(1))}, hot by run ${finishedAt[0]}; ` +
        `derived drain of ${REAL.backlog.toLocaleString('en')} events: ${drainHours(REAL.quota).toFixed(1)} h at ${REAL.quota}/s, ${drainHours(REAL.quotaSmallRegion).toFixed(1)} h at ${REAL.quotaSmallRegion}/s`,
    );
    for (const [i, r] of runs.entries())
      console.info(`[outbox drain] run ${i}: ${r.ms} ms, ${merchants.map((m) => r.byMerchant.get(m) ?? 0).join(' ')}`);
    // No merchant starved: the longest run of sweeps a merchant with events left waited without publishing any.
    const longestWait = merchants.map((m) => {
      let longest = 0;
      let current = 0;
      for (const [i, r] of runs.entries()) {
        if (leftAfter(runs, i - 1, m, backlog) === 0) break;
        current = r.byMerchant.get(m) ? 0 : current + 1;
        longest = Math.max(longest, current);
      }
      return longest;
    });
    console.info(`[outbox drain] longest wait per merchant (runs): ${longestWait.join(' ')}`);
    // Equal backlogs drain at an equal pace wherever a merchant stands in the directory: within 3 runs
    // of each other (a sweeper that always started at the first merchant: 7 apart; one that stopped
    // the run at the first refusal: 5). Nobody waits long with events left.
    const smallFinish = finishedAt.slice(1);
    expect(Math.max(...smallFinish) - Math.min(...smallFinish), JSON.stringify(smallFinish)).toBeLessThanOrEqual(3);
    expect(Math.max(...longestWait)).toBeLessThanOrEqual(5);
    expect(efficiency).toBeGreaterThan(0.4);
    // The oldest item is 30 h old at recovery: the rest of its 72 h must cover the drain, in the smaller region too.
    expect(30 + drainHours(REAL.quotaSmallRegion)).toBeLessThan(OUTBOX_TTL_SECONDS / 3600);
  });
});

/** Events of `m` still unpublished after run `i` (-1: before the first). */
const leftAfter = (runs: { byMerchant: Map<string, number> }[], i: number, m: string, backlog: Map<string, string[]>): number =>
  backlog.get(m)!.length - runs.slice(0, i + 1).reduce((n, r) => n + (r.byMerchant.get(m) ?? 0), 0);
