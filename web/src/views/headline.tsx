import { type Api, type Me, ok } from '../api';
import { Sparkline } from '../chart';
import { monthBefore, previousRange, previousWords, RANGES, rangeStart, todayIn } from '../dates';
import { amounts, type Compared, change, compactCount, compactMoney, count, money, percent } from '../format';
import { type Async, Choice, Figure, Panel, rawText, useAsync } from '../ui';

/**
 * The overview's first row: four headline figures of this month (MRR, net revenue, new buyers, MRR
 * churn rate), each with its change against last month and a trend line over the last 12 months.
 * Their definitions sit behind an ⓘ button on each, as every figure's do (Figure). Large amounts are written short (`NT$1.53M`)
 * with the exact value on hover and for screen readers.
 *
 * A second row under it, *Trials and failed payments*: trials started and the trial conversion
 * rate, and the recovery rate of failed renewals, over the overview's range (the MRR chart's, which
 * its own Range picker also sets), each against the range of the same length before it; and the
 * MRR past due now, against the end of last month (from the first row's MRR series).
 */
type Kind = 'money' | 'count' | 'percent';
type Headline = {
  id: string;
  label: string;
  kind: Kind;
  /** This month's value and last month's, as the API gives them. */
  raw: string | number | null;
  previous: string | number | null;
  /** One value a month, oldest first (this month last). */
  trend: (number | null)[];
  /** Whether a rise is good news (churn: no). */
  upIsGood: boolean;
  info: string;
  /** What the change compares with (default: last month). */
  than?: Compared;
};

const written = (kind: Kind, raw: string | number | null, currency: string) =>
  raw === null ? '—' : kind === 'money' ? money(String(raw), currency) : kind === 'count' ? count(Number(raw)) : percent(Number(raw), 2);

const shortOf = (kind: Kind, raw: string | number | null, currency: string) =>
  raw === null ? null : kind === 'money' ? compactMoney(String(raw), currency) : kind === 'count' ? compactCount(Number(raw)) : null;

const ARROWS = { up: '▲', down: '▼', flat: '■', none: '·' };

const HeadlineFigure = ({ h, currency }: { h: Headline; currency: string }) => {
  const c = change(h, h.than);
  const tone = c.direction === 'up' || c.direction === 'down' ? ((c.direction === 'up') === h.upIsGood ? 'good' : 'bad') : '';
  return (
    <Figure
      id={h.id}
      class="kpi"
      label={h.label}
      value={written(h.kind, h.raw, currency)}
      short={shortOf(h.kind, h.raw, currency)}
      raw={h.raw}
      attrs={{ 'data-previous': rawText(h.previous) }}
      info={h.info}
    >
      <dd class={`change ${tone}`} data-testid={`${h.id}-change`}>
        <span aria-hidden="true">{ARROWS[c.direction]} </span>
        {c.text}
      </dd>
      <dd class="trend">
        <Sparkline values={h.trend} />
      </dd>
    </Figure>
  );
};

/** A range's trend by week for the day ranges, by month for the others. */
const trendInterval = (range: string): 'week' | 'month' => ('days' in RANGES.find((r) => r.id === range)! ? 'week' : 'month');

/** Two loads as one panel's: loading until both are in, else the first error, else both answers (with the second's parameters). */
const both = <A, B, P>(a: Async<A, unknown>, b: Async<B, P>): Async<{ first: A; second: B }, P> => {
  if (a.state === 'error') return { params: b.params, state: 'error', error: a.error };
  if (b.state === 'error') return { params: b.params, state: 'error', error: b.error };
  if (a.state === 'loading' || b.state === 'loading') return { params: b.params, state: 'loading' };
  return { params: b.params, state: 'ready', data: { first: a.data, second: b.data } };
};

export const Headline = ({ api, me, range, setRange }: { api: Api; me: Me; range: string; setRange: (r: string) => void }) => {
  const [result, retry] = useAsync({ zone: me.timezone }, async () => {
    const today = todayIn(me.timezone);
    const range = { interval: 'month' as const, start_date: rangeStart('12m', today), end_date: today };
    const [mrr, sales] = await Promise.all([
      ok(api.GET('/metrics/mrr', { params: { query: range } })),
      ok(api.GET('/metrics/sales', { params: { query: range } })),
    ]);
    return { mrr, sales, today };
  });
  // Trials and recovery over the overview's range and the range before it (only its summary: one bucket a year).
  const [trialsResult, retryTrials] = useAsync({ zone: me.timezone, range }, async (p) => {
    const today = todayIn(p.zone);
    const window = { start_date: rangeStart(p.range, today), end_date: today };
    const before = previousRange(p.range, today);
    const now = { ...window, interval: trendInterval(p.range) };
    const then = { ...before, interval: 'year' as const };
    const [trials, trialsBefore, recovery, recoveryBefore] = await Promise.all([
      ok(api.GET('/metrics/trials', { params: { query: now } })),
      ok(api.GET('/metrics/trials', { params: { query: then } })),
      ok(api.GET('/metrics/recovery', { params: { query: now } })),
      ok(api.GET('/metrics/recovery', { params: { query: then } })),
    ]);
    return { trials, trialsBefore, recovery, recoveryBefore, window, before };
  });
  const second = both(result, trialsResult);
  const retrySecond = () => {
    if (result.state === 'error') retry();
    if (trialsResult.state === 'error') retryTrials();
  };
  return (
    <>
      <Panel id="headline" title="This month at a glance" wide result={result} retry={retry}>
        {({ mrr, sales, today }, { zone }) => {
          const ccy = me.reporting_currency;
          const [m, mPrev] = [mrr.data.at(-1) ?? null, mrr.data.at(-2) ?? null];
          const [s, sPrev] = [sales.data.at(-1) ?? null, sales.data.at(-2) ?? null];
          const month = `this month (${monthBefore(today, 0)}, ${zone}) so far`;
          const churned = m ? money(m.churn.replace('-', ''), ccy) : '—';
          const figures: Headline[] = [
            {
              id: 'headline_mrr',
              label: 'MRR',
              kind: 'money',
              raw: m?.mrr ?? null,
              previous: mPrev?.mrr ?? null,
              trend: mrr.data.map((e) => Number(e.mrr)),
              upIsGood: true,
              info: `Monthly recurring revenue now (subscriptions and running recurring orders), in ${ccy}; compared with the MRR at the end of last month.`,
            },
            {
              id: 'headline_net_revenue',
              label: 'Net revenue',
              kind: 'money',
              raw: s?.net_revenue ?? null,
              previous: sPrev?.net_revenue ?? null,
              trend: sales.data.map((e) => Number(e.net_revenue)),
              upIsGood: true,
              info: `Money of the orders paid ${month}, less the refunds of the month, in ${ccy} (other currencies at their month's rate); compared with the whole of last month.`,
            },
            {
              id: 'headline_new_buyers',
              label: 'New buyers',
              kind: 'count',
              raw: s?.new_buyers ?? null,
              previous: sPrev?.new_buyers ?? null,
              trend: sales.data.map((e) => e.new_buyers),
              upIsGood: true,
              info: `Customers whose first paid order was paid ${month}; compared with the whole of last month.`,
            },
            {
              id: 'headline_mrr_churn',
              label: 'MRR churn rate',
              kind: 'percent',
              raw: m?.mrr_churn_rate ?? null,
              previous: mPrev?.mrr_churn_rate ?? null,
              trend: mrr.data.map((e) => e.mrr_churn_rate),
              upIsGood: false,
              info: `MRR lost to churn and contraction ${month} ÷ MRR at the end of last month (gross). Churned MRR this month: ${churned}.`,
            },
          ];
          const leftOut = Object.entries(sales.unconverted);
          return (
            <>
              <dl class="headline">
                {figures.map((h) => (
                  <HeadlineFigure key={h.id} h={h} currency={ccy} />
                ))}
              </dl>
              <p class="hint">Changes compare with last month; trend lines show the last 12 months.</p>
              {(leftOut.length > 0 || (m && Object.keys(m.unconverted).length > 0)) && (
                <p class="hint" data-testid="headline-unconverted" data-unconverted={JSON.stringify(sales.unconverted)}>
                  Left out for want of an exchange rate:{' '}
                  {[
                    ...leftOut.map(([ccy, v]) => `${amounts({ [ccy]: v.gross_revenue })} of sales`),
                    ...(m && Object.keys(m.unconverted).length ? [`${amounts(m.unconverted)} of MRR`] : []),
                  ].join(', ')}
                  . Set rates in Settings.
                </p>
              )}
            </>
          );
        }}
      </Panel>
      <Panel
        id="trials"
        title="Trials and failed payments"
        wide
        result={second}
        retry={retrySecond}
        actions={
          <Choice
            label="Range"
            value={range}
            onChange={setRange}
            options={RANGES.map((r) => ({ value: r.id, label: r.label }))}
            testId="trials-range"
          />
        }
      >
        {({ first: { mrr }, second: t }, loaded) => {
          const ccy = me.reporting_currency;
          const [m, mPrev] = [mrr.data.at(-1) ?? null, mrr.data.at(-2) ?? null];
          const label = RANGES.find((r) => r.id === loaded.range)!.label.toLowerCase();
          const over = `in ${t.window.start_date} to ${t.window.end_date} (${loaded.zone})`;
          const prev = previousWords(loaded.range);
          const than = { from: prev, in: `in ${prev}` };
          const was = `${t.before.start_date} to ${t.before.end_date}`;
          const { trials: tr, recovery: rc } = t;
          const avg = tr.summary.avg_days_to_convert;
          const figures: Headline[] = [
            {
              id: 'headline_trials_started',
              label: 'Trials started',
              kind: 'count',
              raw: tr.summary.trials_started,
              previous: t.trialsBefore.summary.trials_started,
              trend: tr.data.map((e) => e.trials_started),
              upIsGood: true,
              than,
              info: `Free trials that started ${over}: ${count(tr.summary.converted)} converted to paying since, ${count(tr.summary.cancelled)} cancelled during the trial, ${count(tr.summary.still_trialing)} still trialing. Compared with ${prev} (${was}).`,
            },
            {
              id: 'headline_trial_conversion',
              label: 'Trial conversion rate',
              kind: 'percent',
              raw: tr.summary.conversion_rate,
              previous: t.trialsBefore.summary.conversion_rate,
              trend: tr.data.map((e) => e.conversion_rate),
              upIsGood: true,
              than,
              info: `Of the trials started ${over} that have ended, the share converted to paying: converted ÷ (started − still trialing); none ended: —.${avg === null ? '' : ` On average ${avg.toLocaleString()} days from start to conversion.`} Compared with the trials started in ${prev} (${was}).`,
            },
            {
              id: 'headline_recovery_rate',
              label: 'Recovery rate',
              kind: 'percent',
              raw: rc.summary.recovery_rate,
              previous: t.recoveryBefore.summary.recovery_rate,
              trend: rc.data.map((e) => e.recovery_rate),
              upIsGood: true,
              than,
              info: `Of the failed renewals (past-due subscriptions) that ended ${over}, the share recovered (paid after all): recovered ÷ (recovered + cancelled as delinquent). ${count(rc.summary.recovered.subscriptions)} recovered (${money(rc.summary.recovered.mrr, ccy)} MRR), ${count(rc.summary.churned.subscriptions)} cancelled as delinquent (${money(rc.summary.churned.mrr, ccy)} MRR). Compared with ${prev} (${was}).`,
            },
            {
              id: 'headline_past_due_mrr',
              label: 'Past-due MRR',
              kind: 'money',
              raw: m?.past_due_mrr ?? null,
              previous: mPrev?.past_due_mrr ?? null,
              trend: mrr.data.map((e) => Number(e.past_due_mrr)),
              upIsGood: false,
              info: `MRR now of the subscriptions whose renewal payment failed and is not recovered yet, in ${ccy}: it still counts in MRR until recovered, or cancelled as delinquent (the Subscriptions view lists them). Compared with the end of last month.`,
            },
          ];
          return (
            <>
              <dl class="headline">
                {figures.map((h) => (
                  <HeadlineFigure key={h.id} h={h} currency={ccy} />
                ))}
              </dl>
              <p class="hint" data-testid="trials-window" data-range={loaded.range}>
                Trials and recovery over the {label}, {t.window.start_date} to {t.window.end_date} ({loaded.zone}; the MRR chart's range),
                compared with {prev}; trend lines by {trendInterval(loaded.range)}. Past-due MRR is now's, compared with the end of last
                month; its trend line shows the last 12 months.
              </p>
            </>
          );
        }}
      </Panel>
    </>
  );
};
