import { useEffect, useState } from 'preact/hooks';
import { AS_CSV, type Api, csvPage, type Me, ok, query } from '../api';
import { heat, MOVEMENTS, type MovementKey, MrrChart } from '../chart';
import { amounts, count, CURRENCIES, money, percent } from '../format';
import {
  CYCLES,
  type Filter,
  filterCurrency,
  filterFromSearch,
  filterQuery,
  filterWords,
  metadataLabel,
  segmentQuery,
  withFilter,
} from '../segment';
import {
  type Async,
  Choice,
  CohortTable,
  DownloadCsv,
  Figures,
  Head,
  ListTable,
  MetadataFilter,
  Panel,
  TableScroll,
  useAsync,
} from '../ui';
import { dayBefore, INTERVALS, RANGES, rangeStart, todayIn } from '../dates';
import { type Drill, DrillPanel } from './drill';
import { Headline } from './headline';

type PlanRow = { plan: string; mrr: string; subscriptions: number; customers: number };
type PlansAnswer = { date: string; data: PlanRow[] };

/** The attributes a panel's content carries: the filter it was loaded for. */
const filterAttrs = (f: Filter) => ({ 'data-segment': f.segment, 'data-metadata': metadataLabel(f) });

/**
 * The segment picker: all, a plan with figures today, a billing cycle, or a currency; and, with
 * it, one customer-metadata pair (key and exact value), applied on submit.
 */
const SegmentPicker = (props: { value: Filter; onChange: (f: Filter) => void; plans: Async<PlansAnswer>; me: Me }) => {
  const { segment, metadata } = props.value;
  const current = segmentQuery(segment).plan;
  const plans = props.plans.state === 'ready' ? props.plans.data.data.map((p) => p.plan) : [];
  // A plan from the address that has no figures today stays choosable (its figures are zero).
  if (current !== undefined && !plans.includes(current)) plans.push(current);
  const groups = [
    { kind: 'plan', label: 'Plan', options: plans },
    { kind: 'billing_cycle', label: 'Billing cycle', options: [...CYCLES] },
    // The reporting currency's own lines too: "All" converts the other currencies into it.
    { kind: 'currency', label: 'Currency', options: [...new Set([props.me.reporting_currency, ...CURRENCIES])] },
  ];
  return (
    <div class="segment-bar">
      <label class="control">
        Segment
        <select value={segment} onChange={(e) => props.onChange({ segment: e.currentTarget.value, metadata })} data-testid="segment">
          <option value="">All (in {props.me.reporting_currency})</option>
          {groups
            .filter((g) => g.options.length > 0)
            .map((g) => (
              <optgroup key={g.kind} label={g.label}>
                {g.options.map((o) => (
                  <option key={o} value={`${g.kind}:${o}`}>
                    {g.label}: {o}
                    {g.kind === 'currency' && o === props.me.reporting_currency ? ' only (nothing converted)' : ''}
                  </option>
                ))}
              </optgroup>
            ))}
        </select>
      </label>
      <MetadataFilter
        value={metadata}
        onChange={(m) => props.onChange({ segment, metadata: m })}
        label="Customer metadata filter"
        testId="metadata"
      />
      <p class="hint segment-note" data-testid="segment-words" {...filterAttrs(props.value)}>
        The recurring-revenue figures, the MRR chart and the cohorts below cover {filterWords(props.value, props.me.reporting_currency)}. A
        metadata filter matches the value exactly (case-sensitive) and reads the matching customers' histories, so it is slower on large
        merchants.
      </p>
    </div>
  );
};

const StatsPanel = ({ api, me }: { api: Api; me: Me }) => {
  // '' is every currency, in the reporting one (no `currency` sent); a currency is its own money alone.
  const [currency, setCurrency] = useState('');
  // The zone is a parameter too: the notes name the zone the figures were loaded in.
  const [result, retry] = useAsync({ currency, zone: me.timezone }, (q) =>
    ok(api.GET('/orders/stats', { params: { query: query({ currency: q.currency || undefined }) } })),
  );
  const options = [
    { value: '', label: `All (in ${me.reporting_currency})` },
    ...[...new Set([me.reporting_currency, ...CURRENCIES])].map((c) => ({
      value: c,
      label: c === me.reporting_currency ? `${c} only (nothing converted)` : c,
    })),
  ];
  return (
    <Panel
      id="stats"
      title="Today"
      result={result}
      retry={retry}
      actions={<Choice label="Currency" value={currency} onChange={setCurrency} options={options} testId="stats-currency" />}
    >
      {({ data, unconverted }, { currency: chosen, zone }) => {
        // All: the reporting currency's revenue and the others' at this month's rate; a currency chosen: its own.
        const shown = chosen || me.reporting_currency;
        const which = chosen ? `in ${shown} only` : `in ${shown} and, at this month's exchange rates, in other currencies`;
        const leftOut = Object.entries(unconverted);
        return (
          <>
            <Figures
              data={data}
              currency={shown}
              attrs={{ 'data-currency': shown }}
              specs={[
                {
                  key: 'today_revenue',
                  label: "Today's revenue",
                  kind: 'money',
                  info: `Orders ${which} paid today (${zone}), by payment time; refunds taken out`,
                },
                {
                  key: 'monthly_revenue',
                  label: "This month's revenue",
                  kind: 'money',
                  info: `Orders ${which} paid from the 1st of this month (${zone}) to now`,
                },
                {
                  key: 'today_count',
                  label: "Today's orders",
                  kind: 'count',
                  info: `Orders created today (${zone}), in any currency and status`,
                },
                {
                  key: 'today_success_rate',
                  label: 'Success rate today',
                  kind: 'percent',
                  digits: 1,
                  info: "Of today's orders, the share paid now",
                },
              ]}
            />
            {leftOut.length > 0 && (
              <p class="hint" data-testid="stats-unconverted" data-unconverted={JSON.stringify(unconverted)}>
                Left out for want of this month's exchange rate:{' '}
                {leftOut
                  .map(([ccy, v]) => `${amounts({ [ccy]: v.monthly_revenue })} this month (${amounts({ [ccy]: v.today_revenue })} today)`)
                  .join(', ')}
                . Set rates in Settings.
              </p>
            )}
          </>
        );
      }}
    </Panel>
  );
};

/** The two churn rates' definitions, for the 30-day summary and a range's (`over`: when, `base`: against what). */
const customerChurn = (over: string, base: string) =>
  `Customers lost (their last live subscription cancelled) ${over} ÷ active customers ${base}`;
const mrrChurn = (over: string, base: string) => `MRR lost to churn and contraction ${over} ÷ MRR ${base} (gross)`;

/** What `unconverted` is (docs/exchange-rates.md), behind its figure's ⓘ button. */
const UNCONVERTED_NOTE = 'MRR in other currencies left out for want of an exchange rate; set rates in Settings';
const leftOut = (e: { unconverted: Record<string, string> }) => Object.keys(e.unconverted).length > 0;

const SummaryPanel = ({ api, me, filter }: { api: Api; me: Me; filter: Filter }) => {
  const [result, retry] = useAsync({ filter }, async (p) => {
    const answer = await api.GET('/metrics/summary', { params: { query: filterQuery(p.filter) } });
    // Recount-Pending: the figures being recounted after a change of zone or rates (these are those of the settings before it).
    return { ...(await ok(Promise.resolve(answer))), settling: answer.response.headers.get('recount-pending') === 'true' };
  });
  // The API's window: today and the 29 days before it, in the merchant's time zone.
  const today = todayIn(me.timezone);
  const days = `${rangeStart('30d', today)} to ${today}`;
  const before = 'before it';
  const over = `in ${days}`;
  return (
    <Panel id="summary" title="Recurring revenue: now, and the last 30 days" result={result} retry={retry}>
      {({ data: s, settling }, loaded) => (
        <>
          {settling && (
            <p class="state" role="status" data-testid="summary-settling">
              Recount pending: after a change of time zone or exchange rates, the figures are being recounted in the background; until the
              recount ends, these are the figures of the settings before the change.
            </p>
          )}
          <p class="hint" data-testid="summary-window" {...filterAttrs(loaded.filter)}>
            Levels are today's; rates and the quick ratio cover {days} ({me.timezone}). Segment:{' '}
            {filterWords(loaded.filter, me.reporting_currency)}.
          </p>
          <Figures
            data={s}
            currency={filterCurrency(loaded.filter, me.reporting_currency)}
            attrs={filterAttrs(loaded.filter)}
            specs={[
              {
                key: 'current_mrr',
                label: 'MRR',
                kind: 'money',
                info: 'Monthly recurring revenue now: subscriptions and running recurring orders',
              },
              { key: 'arr', label: 'ARR', kind: 'money', info: '12 × MRR now' },
              { key: 'arpa', label: 'ARPA', kind: 'money', info: 'MRR now ÷ active customers' },
              { key: 'active_customers', label: 'Active customers', kind: 'count', info: 'Customers with MRR above 0 now' },
              { key: 'active_subscriptions', label: 'Active subscriptions', kind: 'count', info: 'Started, not paused or cancelled, now' },
              { key: 'customer_churn_rate', label: 'Customer churn rate', kind: 'percent', info: customerChurn(over, before) },
              { key: 'mrr_churn_rate', label: 'MRR churn rate', kind: 'percent', info: mrrChurn(over, before) },
              {
                key: 'net_mrr_churn_rate',
                label: 'Net MRR churn rate',
                kind: 'percent',
                info: `MRR lost less expansion and reactivation ${over} ÷ MRR ${before}`,
              },
              {
                key: 'quick_ratio',
                label: 'Quick ratio',
                kind: 'ratio',
                info: `MRR gained (new, expansion, reactivation) ÷ MRR lost, ${over}`,
              },
              { key: 'ltv', label: 'LTV', kind: 'money', info: 'ARPA ÷ the customer churn rate above' },
              { key: 'unconverted', label: 'Unconverted MRR', kind: 'amounts', info: UNCONVERTED_NOTE },
            ]}
          />
        </>
      )}
    </Panel>
  );
};

/** How many month ends of committed MRR the chart shows after a range: about half its length. */
const FORECAST_MONTHS: Record<string, number> = { '30d': 2, '90d': 3, '6m': 3, '12m': 6, '24m': 12 };
/** The chart's churn split, as columns of its table after Churn. */
const CHURN_SPLIT = [
  { key: 'voluntary_churn', label: 'Voluntary churn' },
  { key: 'delinquent_churn', label: 'Delinquent churn' },
] as const;

/** A movement figure of the MRR table, and the cell's button that opens its drill-down (`data-drill`), or its bar in the chart. */
const drillId = (d: { start: string; type: string }) => `${d.start}:${d.type}`;

const MrrPanel = (props: { api: Api; me: Me; filter: Filter; range: string; setRange: (r: string) => void }) => {
  const { api, me, filter, range, setRange } = props;
  const [interval, setMrrInterval] = useState<(typeof INTERVALS)[number]>('month');
  // The figure whose customers are listed under the panel; closed when the chart's parameters change.
  const [drill, setDrill] = useState<Drill | null>(null);
  const chartKey = JSON.stringify({ interval, range, filter });
  useEffect(() => setDrill(null), [chartKey]);
  const closeDrill = () => {
    const opener = drill && drillId(drill);
    setDrill(null);
    // Back to the figure that opened it.
    requestAnimationFrame(() => document.querySelector<HTMLElement>(`[data-drill="${opener}"]`)?.focus());
  };
  const [result, retry] = useAsync({ interval, range, filter }, async (p) => {
    const mrr = ok(
      api.GET('/metrics/mrr', {
        params: {
          query: {
            interval: p.interval,
            start_date: rangeStart(p.range, todayIn(me.timezone)),
            end_date: todayIn(me.timezone),
            ...filterQuery(p.filter),
          },
        },
      }),
    );
    // The committed MRR after today: the whole business only (the forecast takes no filter).
    const whole = Object.keys(filterQuery(p.filter)).length === 0;
    const forecast = whole ? ok(api.GET('/metrics/forecast', { params: { query: { months: FORECAST_MONTHS[p.range] ?? 6 } } })) : null;
    return Object.assign(await mrr, { forecast: await forecast });
  });
  return (
    <>
      <Panel
        id="mrr"
        title="MRR movements"
        wide
        result={result}
        retry={retry}
        isEmpty={(s) =>
          s.data.every((e) => e.mrr === '0.00' && MOVEMENTS.every((m) => e[m.key] === '0.00') && !leftOut(e)) &&
          (s.forecast?.data ?? []).every((f) => f.committed_mrr === '0.00' && f.new === '0.00')
        }
        empty="No recurring revenue in this range."
        actions={
          <div class="controls">
            <Choice
              label="Interval"
              value={interval}
              onChange={(v) => setMrrInterval(v as typeof interval)}
              options={[...INTERVALS]}
              testId="mrr-interval"
            />
            <Choice
              label="Range"
              value={range}
              onChange={setRange}
              options={RANGES.map((r) => ({ value: r.id, label: r.label }))}
              testId="mrr-range"
            />
          </div>
        }
      >
        {(series, loaded) => {
          const ccy = filterCurrency(loaded.filter, me.reporting_currency);
          // The movements list takes no segment or metadata filter: its customers are the whole's only.
          const drillable = Object.keys(filterQuery(loaded.filter)).length === 0;
          const today = todayIn(me.timezone);
          // The column of amounts left out for want of a rate, only when some point has any.
          const anyLeftOut = series.data.some(leftOut);
          /** A bucket's days within the range: its date to the day before the next bucket's, or to today. */
          const bucketEnd = (i: number) => (i + 1 < series.data.length ? dayBefore(series.data[i + 1].date) : today);
          /** The drill-down of a point's movement; none under a filter or for a zero figure (plain text in the table). */
          const figureDrill = (i: number, type: MovementKey): Drill | null => {
            const e = series.data[i];
            if (!drillable || e[type] === '0.00') return null;
            return { type, label: MOVEMENTS.find((m) => m.key === type)!.label, start: e.date, end: bucketEnd(i), figure: e[type] };
          };
          const isOpen = (cell: Drill) => drill !== null && drillId(drill) === drillId(cell);
          /** What a figure's button and its bar do: open its drill-down, or close it if it is the one open. */
          const toggleDrill = (i: number, type: MovementKey) => {
            const cell = figureDrill(i, type);
            if (cell && isOpen(cell)) closeDrill();
            else if (cell) setDrill(cell);
          };
          return (
            <>
              <p class="hint" data-testid="range-window">
                {RANGES.find((r) => r.id === loaded.range)!.label}: {rangeStart(loaded.range, todayIn(me.timezone))} to{' '}
                {todayIn(me.timezone)} ({me.timezone}), by {loaded.interval}. Segment: {filterWords(loaded.filter, me.reporting_currency)}.
              </p>
              <Figures
                data={series.summary}
                currency={ccy}
                compact
                attrs={{ 'data-interval': loaded.interval, 'data-range': loaded.range, ...filterAttrs(loaded.filter) }}
                specs={[
                  {
                    key: 'current_mrr',
                    id: 'range_mrr',
                    label: 'MRR at the end',
                    kind: 'money',
                    info: "MRR at the end of the range's last day",
                  },
                  { key: 'arr', id: 'range_arr', label: 'ARR', kind: 'money', info: '12 × MRR at the end' },
                  { key: 'arpa', id: 'range_arpa', label: 'ARPA', kind: 'money', info: 'MRR at the end ÷ active customers then' },
                  {
                    key: 'customer_churn_rate',
                    id: 'range_customer_churn',
                    label: 'Customer churn rate',
                    kind: 'percent',
                    info: customerChurn('in the range', 'just before it'),
                  },
                  {
                    key: 'mrr_churn_rate',
                    id: 'range_mrr_churn',
                    label: 'MRR churn rate',
                    kind: 'percent',
                    info: mrrChurn('in the range', 'just before it'),
                  },
                ]}
              />
              {anyLeftOut && (
                <p class="hint" data-testid="mrr-unconverted-hint" data-unconverted={JSON.stringify(series.summary.unconverted)}>
                  These figures leave out MRR in other currencies for want of an exchange rate for its month
                  {leftOut(series.summary) ? `: ${amounts(series.summary.unconverted)} at the end of the range` : ' in some periods'}. The
                  table below lists it per period (Unconverted); set rates in Settings.
                </p>
              )}
              <MrrChart
                entries={series.data}
                currency={ccy}
                interval={loaded.interval}
                onBar={drillable ? toggleDrill : undefined}
                committed={series.forecast ?? undefined}
              />
              {series.forecast ? (
                <p class="hint" data-testid="committed-note" data-committed={series.forecast.summary.committed_mrr}>
                  The dashed line after today is the committed MRR at each month end: today's MRR (
                  {money(series.forecast.summary.current_mrr, ccy)}) moved only by what is already scheduled — trial conversions, scheduled
                  cancellations, and past-due subscriptions cancelled as delinquent unless recovered; no new sales.{' '}
                  {money(series.forecast.summary.committed_mrr, ccy)} at the end of {series.forecast.data.at(-1)?.date}.
                  {Object.keys(series.forecast.summary.unconverted).length > 0 &&
                    ` Left out for want of an exchange rate: ${amounts(series.forecast.summary.unconverted)}.`}
                </p>
              ) : (
                <p class="hint" data-testid="committed-note">
                  The committed MRR (what is already scheduled) is shown for All only, without a metadata filter: it covers the whole
                  business.
                </p>
              )}
              <details class="data-table">
                <summary>MRR movements as a table</summary>
                <p class="hint" data-testid="drill-hint" data-drillable={String(drillable)}>
                  {drillable
                    ? 'Pick a movement figure to list the customers behind it.'
                    : 'The customers behind a figure are listed for All only, without a metadata filter: the list of movements covers the whole business.'}
                </p>
                <TableScroll label="MRR movements by period">
                  <table data-testid="mrr-table">
                    <Head
                      cols={[
                        'Period from',
                        'MRR',
                        ...MOVEMENTS.map((m) => m.label),
                        ...CHURN_SPLIT.map((c) => c.label),
                        'Past-due MRR',
                        'Net change',
                        'Customers',
                        ...(anyLeftOut ? ['Unconverted'] : []),
                      ]}
                    />
                    <tbody>
                      {series.data.map((e, i) => (
                        <tr key={e.date} data-date={e.date} data-mrr={e.mrr} data-unconverted={JSON.stringify(e.unconverted)}>
                          <th scope="row">{e.date}</th>
                          <td class="num">{money(e.mrr, ccy)}</td>
                          {MOVEMENTS.map((m) => {
                            const cell = figureDrill(i, m.key);
                            return (
                              <td class="num" key={m.key} data-type={m.key} data-value={e[m.key]}>
                                {cell ? (
                                  <button
                                    type="button"
                                    class="link figure-button"
                                    aria-pressed={isOpen(cell)}
                                    data-drill={drillId(cell)}
                                    onClick={() => toggleDrill(i, m.key)}
                                  >
                                    {money(e[m.key], ccy)}
                                    <span class="visually-hidden">
                                      : customers behind {m.label.toLowerCase()}, {cell.start} to {cell.end}
                                    </span>
                                  </button>
                                ) : (
                                  money(e[m.key], ccy)
                                )}
                              </td>
                            );
                          })}
                          {CHURN_SPLIT.map((c) => (
                            <td class="num" key={c.key} data-type={c.key} data-value={e[c.key]}>
                              {money(e[c.key], ccy)}
                            </td>
                          ))}
                          <td class="num" data-type="past_due_mrr" data-value={e.past_due_mrr}>
                            {money(e.past_due_mrr, ccy)}
                          </td>
                          <td class="num">{money(e.net_change, ccy)}</td>
                          <td class="num">{e.active_customers}</td>
                          {anyLeftOut && (
                            <td class="num" data-testid="mrr-unconverted">
                              {leftOut(e) ? amounts(e.unconverted) : '—'}
                            </td>
                          )}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableScroll>
              </details>
              {series.forecast && (
                <details class="data-table">
                  <summary>Committed MRR as a table</summary>
                  <TableScroll label="Committed MRR by month end">
                    <table data-testid="committed-table">
                      <Head cols={['Month end', 'Committed MRR', 'Trial conversions', 'Scheduled churn', 'Of which delinquent']} />
                      <tbody>
                        {series.forecast.data.map((f) => (
                          <tr
                            key={f.date}
                            data-date={f.date}
                            data-committed={f.committed_mrr}
                            data-new={f.new}
                            data-churn={f.churn}
                            data-delinquent={f.delinquent_churn}
                          >
                            <th scope="row">{f.date}</th>
                            <td class="num">{money(f.committed_mrr, ccy)}</td>
                            <td class="num">{money(f.new, ccy)}</td>
                            <td class="num">{money(f.churn, ccy)}</td>
                            <td class="num">{money(f.delinquent_churn, ccy)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </TableScroll>
                </details>
              )}
            </>
          );
        }}
      </Panel>
      {drill && (
        <DrillPanel key={drillId(drill)} api={api} drill={drill} currency={me.reporting_currency} zone={me.timezone} onClose={closeDrill} />
      )}
    </>
  );
};

const CohortsPanel = ({ api, me, filter }: { api: Api; me: Me; filter: Filter }) => {
  const [result, retry] = useAsync({ filter }, (p) => ok(api.GET('/metrics/cohorts', { params: { query: filterQuery(p.filter) } })));
  return (
    <Panel
      id="cohorts"
      title="Cohort retention (customers)"
      wide
      result={result}
      retry={retry}
      isEmpty={(r) => r.data.every((c) => c.customers === 0)}
      empty="No cohorts yet: customers appear here from their first month with MRR."
    >
      {({ data }, loaded) => {
        const width = Math.max(...data.map((c) => c.retention.length));
        return (
          <>
            <p class="hint" data-testid="cohorts-segment" {...filterAttrs(loaded.filter)}>
              Customers by the month their MRR first went above 0, and the share still paying each month after. Segment:{' '}
              {filterWords(loaded.filter, me.reporting_currency)}.
            </p>
            <CohortTable
              label="Cohort retention"
              caption="Share of each monthly cohort's customers still paying, by months since joining"
              testId="cohorts"
              cohorts={data.filter((c) => c.customers > 0)}
              name={(c) => c.cohort}
              customers={(c) => c.customers}
              width={width}
              cell={(c, i) => {
                const r = c.retention[i];
                return (
                  <td
                    key={i}
                    class="num cell"
                    style={{ background: heat(r?.customer_retention ?? null) }}
                    title={r ? `${r.month}: ${r.customers} customers` : undefined}
                  >
                    {r ? percent(r.customer_retention, 0) : ''}
                  </td>
                );
              }}
            />
          </>
        );
      }}
    </Panel>
  );
};

const PlansPanel = ({ api, me, result, retry }: { api: Api; me: Me; result: Async<PlansAnswer>; retry: () => void }) => {
  const ccy = me.reporting_currency;
  return (
    <Panel
      id="plans"
      title="MRR by plan"
      wide
      result={result}
      retry={retry}
      isEmpty={(a) => a.data.length === 0}
      empty="No plan has MRR or live subscriptions today."
      actions={<DownloadCsv fileName="mrr-by-plan.csv" testId="plans-csv" page={() => csvPage(api.GET('/metrics/plans', AS_CSV))} />}
    >
      {(answer) => (
        <>
          <p class="hint" data-testid="plans-note" data-date={answer.date}>
            Each plan's MRR, active subscriptions and customers with MRR in it at the end of {answer.date} ({me.timezone}), largest MRR
            first; all currencies in {ccy}.
          </p>
          <ListTable
            label="MRR by plan"
            testId="plans"
            items={answer.data}
            rowKey={(p) => p.plan}
            rowAttrs={(p) => ({ 'data-plan': p.plan, 'data-mrr': p.mrr })}
            columns={[
              { label: 'Plan', cell: (p) => p.plan },
              { label: 'MRR', num: true, cell: (p) => money(p.mrr, ccy) },
              { label: 'Subscriptions', num: true, cell: (p) => count(p.subscriptions) },
              { label: 'Customers', num: true, cell: (p) => count(p.customers) },
            ]}
          />
        </>
      )}
    </Panel>
  );
};

const NO_REASON = 'No reason given';

const ChurnReasonsPanel = ({ api, me, range }: { api: Api; me: Me; range: string }) => {
  const ccy = me.reporting_currency;
  const window = (r: string) => ({ start_date: rangeStart(r, todayIn(me.timezone)), end_date: todayIn(me.timezone) });
  const [result, retry] = useAsync({ range }, (p) => ok(api.GET('/metrics/churn-reasons', { params: { query: window(p.range) } })));
  return (
    <Panel
      id="churn-reasons"
      title="Churn by reason"
      wide
      result={result}
      retry={retry}
      isEmpty={(a) => a.data.length === 0}
      empty="No cancellation churned a customer in this range."
      actions={
        <DownloadCsv
          fileName={`churn-by-reason-${range}.csv`}
          testId="churn-reasons-csv"
          page={() => csvPage(api.GET('/metrics/churn-reasons', { params: { query: window(range) }, ...AS_CSV }))}
        />
      }
    >
      {(answer, loaded) => (
        <>
          <p class="hint" data-testid="churn-reasons-note" data-range={loaded.range}>
            MRR that cancellations took to 0, and the customers they churned, per reason given, from {window(loaded.range).start_date} to{' '}
            {window(loaded.range).end_date} ({me.timezone}, the MRR chart's range); pauses and partial cancellations are not counted. All
            revenue, in {ccy}.
          </p>
          <ListTable
            label="Churn by reason"
            testId="churn-reasons"
            items={answer.data}
            rowKey={(r) => r.reason ?? ''}
            rowAttrs={(r) => ({ 'data-reason': r.reason ?? '', 'data-mrr': r.churned_mrr })}
            columns={[
              { label: 'Reason', cell: (r) => r.reason ?? <em>{NO_REASON}</em> },
              { label: 'Churned MRR', num: true, cell: (r) => money(r.churned_mrr, ccy) },
              { label: 'Churned customers', num: true, cell: (r) => count(r.churned_customers) },
            ]}
          />
        </>
      )}
    </Panel>
  );
};

export const Overview = ({ api, me }: { api: Api; me: Me }) => {
  const [filter, setFilter] = useState<Filter>(() => filterFromSearch(location.search));
  const [range, setRange] = useState('12m');
  const [plans, retryPlans] = useAsync(null, () => ok(api.GET('/metrics/plans')));
  // Kept in the address, replaced in place (no history entry).
  useEffect(() => {
    const href = withFilter(location.href, filter);
    if (href !== location.href) history.replaceState(history.state, '', href);
  }, [filter]);
  return (
    <div class="grid">
      <Headline api={api} me={me} range={range} setRange={setRange} />
      <StatsPanel api={api} me={me} />
      <SegmentPicker value={filter} onChange={setFilter} plans={plans} me={me} />
      <SummaryPanel api={api} me={me} filter={filter} />
      <MrrPanel api={api} me={me} filter={filter} range={range} setRange={setRange} />
      <CohortsPanel api={api} me={me} filter={filter} />
      <PlansPanel api={api} me={me} result={plans} retry={retryPlans} />
      <ChurnReasonsPanel api={api} me={me} range={range} />
    </div>
  );
};
