import { useState } from 'preact/hooks';
import { ok, query, type Api, type Me } from '../api';
import { MOVEMENTS, MrrChart } from '../chart';
import { count, CURRENCIES, money, percent, ratio } from '../format';
import { Choice, Figure, Head, Panel, TableScroll, useAsync } from '../ui';

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
        <dl class="figures" data-currency={shown}>
          <Figure id="today_revenue" label="Today's revenue" value={money(data.today_revenue, shown)} raw={data.today_revenue} />
          <Figure id="monthly_revenue" label="This month's revenue" value={money(data.monthly_revenue, shown)} raw={data.monthly_revenue} />
          <Figure id="today_count" label="Today's orders" value={count(data.today_count)} raw={data.today_count} />
          <Figure
            id="today_success_rate"
            label="Success rate today"
            value={percent(data.today_success_rate, 1)}
            raw={data.today_success_rate}
          />
        </dl>
      )}
    </Panel>
  );
};

const SummaryPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/metrics/summary')));
  const ccy = me.reporting_currency;
  return (
    <Panel id="summary" title="Recurring revenue (last 30 days)" result={result} retry={retry}>
      {({ data: s }) => (
        <dl class="figures">
          <Figure id="current_mrr" label="MRR" value={money(s.current_mrr, ccy)} raw={s.current_mrr} />
          <Figure id="arr" label="ARR" value={money(s.arr, ccy)} raw={s.arr} />
          <Figure id="arpa" label="ARPA" value={money(s.arpa, ccy)} raw={s.arpa} />
          <Figure id="active_customers" label="Active customers" value={count(s.active_customers)} raw={s.active_customers} />
          <Figure
            id="active_subscriptions"
            label="Active subscriptions"
            value={count(s.active_subscriptions)}
            raw={s.active_subscriptions}
          />
          <Figure id="customer_churn_rate" label="Customer churn" value={percent(s.customer_churn_rate)} raw={s.customer_churn_rate} />
          <Figure id="mrr_churn_rate" label="MRR churn" value={percent(s.mrr_churn_rate)} raw={s.mrr_churn_rate} />
          <Figure id="net_mrr_churn_rate" label="Net MRR churn" value={percent(s.net_mrr_churn_rate)} raw={s.net_mrr_churn_rate} />
          <Figure id="quick_ratio" label="Quick ratio" value={ratio(s.quick_ratio)} raw={s.quick_ratio} />
          <Figure id="ltv" label="LTV" value={money(s.ltv, ccy)} raw={s.ltv} />
        </dl>
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
          <dl class="figures compact" data-interval={loaded.interval} data-range={loaded.range}>
            <Figure id="range_mrr" label="MRR at the end" value={money(series.summary.current_mrr, ccy)} raw={series.summary.current_mrr} />
            <Figure id="range_arr" label="ARR" value={money(series.summary.arr, ccy)} raw={series.summary.arr} />
            <Figure id="range_arpa" label="ARPA" value={money(series.summary.arpa, ccy)} raw={series.summary.arpa} />
            <Figure
              id="range_customer_churn"
              label="Customer churn"
              value={percent(series.summary.customer_churn_rate)}
              raw={series.summary.customer_churn_rate}
            />
            <Figure
              id="range_mrr_churn"
              label="MRR churn"
              value={percent(series.summary.mrr_churn_rate)}
              raw={series.summary.mrr_churn_rate}
            />
          </dl>
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
