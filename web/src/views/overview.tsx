import { useState } from 'preact/hooks';
import { ok, query, type Api, type Me } from '../api';
import { MOVEMENTS, MrrChart } from '../chart';
import { CURRENCIES, money, percent } from '../format';
import { Choice, Figures, Head, Panel, TableScroll, useAsync } from '../ui';

const RANGES = [
  { id: '30d', label: 'Last 30 days', days: 29 },
  { id: '90d', label: 'Last 90 days', days: 89 },
  { id: '6m', label: 'Last 6 months', months: 5 },
  { id: '12m', label: 'Last 12 months', months: 11 },
  { id: '24m', label: 'Last 24 months', months: 23 },
] as const;
const INTERVALS = ['day', 'week', 'month', 'quarter', 'year'] as const;

const isoDay = (d: Date) => d.toISOString().slice(0, 10);
/** The range's first day (UTC): N days back, or the 1st of the month N months back. */
const rangeStart = (id: string, today = new Date()) => {
  const r = RANGES.find((x) => x.id === id)!;
  if ('days' in r) return isoDay(new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - r.days)));
  return isoDay(new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - r.months, 1)));
};

const StatsPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [currency, setCurrency] = useState(me.reporting_currency);
  const [result, retry] = useAsync({ currency }, (q) => ok(api.GET('/orders/stats', { params: { query: query(q) } })));
  const options = CURRENCIES.includes(me.reporting_currency) ? CURRENCIES : [me.reporting_currency, ...CURRENCIES];
  return (
    <Panel
      id="stats"
      title="Today"
      result={result}
      retry={retry}
      actions={<Choice label="Currency" value={currency} onChange={setCurrency} options={options} testId="stats-currency" />}
    >
      {({ data }, { currency: shown }) => (
        <Figures
          data={data}
          currency={shown}
          attrs={{ 'data-currency': shown }}
          specs={[
            {
              key: 'today_revenue',
              label: "Today's revenue",
              kind: 'money',
              note: `Orders in ${shown} paid today (UTC), by payment time; refunds taken out`,
            },
            {
              key: 'monthly_revenue',
              label: "This month's revenue",
              kind: 'money',
              note: `Orders in ${shown} paid from the 1st of this month (UTC) to now`,
            },
            { key: 'today_count', label: "Today's orders", kind: 'count', note: 'Orders created today (UTC), in any currency and status' },
            {
              key: 'today_success_rate',
              label: 'Success rate today',
              kind: 'percent',
              digits: 1,
              note: "Of today's orders, the share paid now",
            },
          ]}
        />
      )}
    </Panel>
  );
};

/** The two churn rates' definitions, for the 30-day summary and a range's (`over`: when, `base`: against what). */
const customerChurn = (over: string, base: string) =>
  `Customers lost (their last live subscription cancelled) ${over} ÷ active customers ${base}`;
const mrrChurn = (over: string, base: string) => `MRR lost to churn and contraction ${over} ÷ MRR ${base} (gross)`;

const SummaryPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/metrics/summary')));
  const ccy = me.reporting_currency;
  // The API's window: today and the 29 days before it (UTC).
  const days = `${rangeStart('30d')} to ${isoDay(new Date())}`;
  const before = 'before it';
  const over = `in ${days}`;
  return (
    <Panel id="summary" title="Recurring revenue: now, and the last 30 days" result={result} retry={retry}>
      {({ data: s }) => (
        <>
          <p class="hint" data-testid="summary-window">
            Levels are today's; rates and the quick ratio cover {days} (UTC). Amounts in {ccy}.
          </p>
          <Figures
            data={s}
            currency={ccy}
            specs={[
              {
                key: 'current_mrr',
                label: 'MRR',
                kind: 'money',
                note: 'Monthly recurring revenue now: subscriptions and running recurring orders',
              },
              { key: 'arr', label: 'ARR', kind: 'money', note: '12 × MRR now' },
              { key: 'arpa', label: 'ARPA', kind: 'money', note: 'MRR now ÷ active customers' },
              { key: 'active_customers', label: 'Active customers', kind: 'count', note: 'Customers with MRR above 0 now' },
              { key: 'active_subscriptions', label: 'Active subscriptions', kind: 'count', note: 'Started, not paused or cancelled, now' },
              { key: 'customer_churn_rate', label: 'Customer churn rate', kind: 'percent', note: customerChurn(over, before) },
              { key: 'mrr_churn_rate', label: 'MRR churn rate', kind: 'percent', note: mrrChurn(over, before) },
              {
                key: 'net_mrr_churn_rate',
                label: 'Net MRR churn rate',
                kind: 'percent',
                note: `MRR lost less expansion and reactivation ${over} ÷ MRR ${before}`,
              },
              {
                key: 'quick_ratio',
                label: 'Quick ratio',
                kind: 'ratio',
                note: `MRR gained (new, expansion, reactivation) ÷ MRR lost, ${over}`,
              },
              { key: 'ltv', label: 'LTV', kind: 'money', note: 'ARPA ÷ the customer churn rate above' },
            ]}
          />
        </>
      )}
    </Panel>
  );
};

const MrrPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [interval, setMrrInterval] = useState<(typeof INTERVALS)[number]>('month');
  const [range, setRange] = useState('12m');
  const [result, retry] = useAsync({ interval, range }, (p) =>
    ok(
      api.GET('/metrics/mrr', {
        params: { query: { interval: p.interval, start_date: rangeStart(p.range), end_date: isoDay(new Date()) } },
      }),
    ),
  );
  const ccy = me.reporting_currency;
  return (
    <Panel
      id="mrr"
      title="MRR movements"
      wide
      result={result}
      retry={retry}
      isEmpty={(s) => s.data.every((e) => e.mrr === '0.00' && MOVEMENTS.every((m) => e[m.key] === '0.00'))}
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
      {(series, loaded) => (
        <>
          <p class="hint" data-testid="range-window">
            {RANGES.find((r) => r.id === loaded.range)!.label}: {rangeStart(loaded.range)} to {isoDay(new Date())} (UTC), by{' '}
            {loaded.interval}. Amounts in {ccy}.
          </p>
          <Figures
            data={series.summary}
            currency={ccy}
            compact
            attrs={{ 'data-interval': loaded.interval, 'data-range': loaded.range }}
            specs={[
              {
                key: 'current_mrr',
                id: 'range_mrr',
                label: 'MRR at the end',
                kind: 'money',
                note: "MRR at the end of the range's last day",
              },
              { key: 'arr', id: 'range_arr', label: 'ARR', kind: 'money', note: '12 × MRR at the end' },
              { key: 'arpa', id: 'range_arpa', label: 'ARPA', kind: 'money', note: 'MRR at the end ÷ active customers then' },
              {
                key: 'customer_churn_rate',
                id: 'range_customer_churn',
                label: 'Customer churn rate',
                kind: 'percent',
                note: customerChurn('in the range', 'just before it'),
              },
              {
                key: 'mrr_churn_rate',
                id: 'range_mrr_churn',
                label: 'MRR churn rate',
                kind: 'percent',
                note: mrrChurn('in the range', 'just before it'),
              },
            ]}
          />
          <MrrChart entries={series.data} currency={ccy} interval={loaded.interval} />
          <details class="data-table">
            <summary>MRR movements as a table</summary>
            <TableScroll label="MRR movements by period">
              <table data-testid="mrr-table">
                <Head cols={['Period from', 'MRR', ...MOVEMENTS.map((m) => m.label), 'Net change', 'Customers']} />
                <tbody>
                  {series.data.map((e) => (
                    <tr key={e.date} data-date={e.date} data-mrr={e.mrr}>
                      <th scope="row">{e.date}</th>
                      <td class="num">{money(e.mrr, ccy)}</td>
                      {MOVEMENTS.map((m) => (
                        <td class="num" key={m.key}>
                          {money(e[m.key], ccy)}
                        </td>
                      ))}
                      <td class="num">{money(e.net_change, ccy)}</td>
                      <td class="num">{e.active_customers}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          </details>
        </>
      )}
    </Panel>
  );
};

/** Retention as a heat map: the colour follows the percentage, which is also written in each cell. */
const heat = (pct: number | null) => (pct === null ? 'transparent' : `hsl(205 70% ${96 - Math.min(100, pct) * 0.36}%)`);

const CohortsPanel = ({ api }: { api: Api }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/metrics/cohorts')));
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
      {({ data }) => {
        const width = Math.max(...data.map((c) => c.retention.length));
        return (
          <TableScroll label="Cohort retention">
            <table class="heatmap" data-testid="cohorts">
              <caption class="visually-hidden">Share of each monthly cohort's customers still paying, by months since joining</caption>
              <Head cols={['Cohort', 'Customers', ...Array.from({ length: width }, (_, i) => `M${i}`)]} />
              <tbody>
                {data
                  .filter((c) => c.customers > 0)
                  .map((c) => (
                    <tr key={c.cohort}>
                      <th scope="row">{c.cohort}</th>
                      <td class="num">{c.customers}</td>
                      {Array.from({ length: width }, (_, i) => {
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
                      })}
                    </tr>
                  ))}
              </tbody>
            </table>
          </TableScroll>
        );
      }}
    </Panel>
  );
};

export const Overview = ({ api, me }: { api: Api; me: Me }) => (
  <div class="grid">
    <StatsPanel api={api} me={me} />
    <SummaryPanel api={api} me={me} />
    <MrrPanel api={api} me={me} />
    <CohortsPanel api={api} />
  </div>
);
