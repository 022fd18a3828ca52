import { useState } from 'preact/hooks';
import { AS_CSV, type Api, csvPage, type Me, ok, query } from '../api';
import { heat, LineChart } from '../chart';
import { INTERVALS, monthBefore, RANGES, rangeStart, todayIn } from '../dates';
import { amounts, compactMoney, count, CURRENCIES, duration, money, percent } from '../format';
import { CYCLES, type MetadataPair } from '../segment';
import { Choice, CohortTable, DownloadCsv, Figures, ListTable, MetadataFilter, Panel, useAsync } from '../ui';

/**
 * Sales: what orders brought in (GET /metrics/sales) by interval and segment, how each payment
 * method does (GET /metrics/payment-methods), and how each month's first-time buyers come back
 * (GET /metrics/purchase-cohorts). Each offers the API's own CSV.
 */
const METHODS = ['credit_card', 'atm', 'cvs', 'wallet_a_pay', 'wallet_b_pay', 'wallet_c_pay', 'none'] as const;
const METHOD_LABELS: Record<(typeof METHODS)[number], string> = {
  credit_card: 'Credit card',
  atm: 'ATM transfer',
  cvs: 'Convenience store',
  wallet_a_pay: 'Wallet A Pay',
  wallet_b_pay: 'Wallet B Pay',
  wallet_c_pay: 'Wallet C Pay',
  none: 'No method',
};
const SOURCES = ['api', 'import', 'manual', 'webhook'] as const;
const BILLING = ['one-time', ...CYCLES] as const;

type Segment = {
  payment_method: (typeof METHODS)[number] | '';
  source: (typeof SOURCES)[number] | '';
  billing_cycle: (typeof BILLING)[number] | '';
  currency: string;
};
const NO_SEGMENT: Segment = { payment_method: '', source: '', billing_cycle: '', currency: '' };

const any = (label: string) => ({ value: '', label });

/** The segment in words, for the hint above the figures. */
const segmentWords = (s: Segment, reporting: string) => {
  const parts = [
    s.payment_method && `paid by ${METHOD_LABELS[s.payment_method]}`,
    s.source && `from the ${s.source} source`,
    s.billing_cycle && `${s.billing_cycle} billing`,
  ].filter(Boolean);
  const money = s.currency ? `orders in ${s.currency} only, in ${s.currency} (not converted)` : `all orders, in ${reporting}`;
  return parts.length ? `${money}, ${parts.join(', ')}` : money;
};

/** The range's days (the merchant's zone) as the API's parameters. */
const window = (range: string, zone: string) => {
  const today = todayIn(zone);
  return { start_date: rangeStart(range, today), end_date: today };
};

/** Amounts left out for want of an exchange rate, per currency (as the other views say it). */
const Unconverted = ({ testId, unconverted }: { testId: string; unconverted: Record<string, { gross_revenue: string }> }) => {
  const entries = Object.entries(unconverted);
  if (entries.length === 0) return null;
  return (
    <p class="hint" data-testid={testId} data-unconverted={JSON.stringify(unconverted)}>
      Left out for want of an exchange rate for their month: {entries.map(([ccy, v]) => amounts({ [ccy]: v.gross_revenue })).join(', ')} of
      sales. Set rates in Settings.
    </p>
  );
};

const SalesPanel = ({ api, me, range }: { api: Api; me: Me; range: string }) => {
  const [interval, setSalesInterval] = useState<(typeof INTERVALS)[number]>('month');
  const [segment, setSegment] = useState<Segment>(NO_SEGMENT);
  const [metadata, setMetadata] = useState<MetadataPair | null>(null);
  const params = { interval, range, segment, metadata, zone: me.timezone };
  const salesQuery = (p: typeof params) =>
    query({
      interval: p.interval,
      ...window(p.range, p.zone),
      ...p.segment,
      // The client escapes values but writes parameter names as given.
      ...(p.metadata ? { [`metadata.${encodeURIComponent(p.metadata.key)}`]: p.metadata.value } : {}),
    });
  const [result, retry] = useAsync(params, (p) => ok(api.GET('/metrics/sales', { params: { query: salesQuery(p) } })));
  const set = (k: keyof Segment) => (v: string) => setSegment({ ...segment, [k]: v });
  return (
    <Panel
      id="sales"
      title="Revenue"
      wide
      result={result}
      retry={retry}
      isEmpty={(a) => a.summary.orders === 0 && Object.keys(a.unconverted).length === 0}
      empty="No orders in this range and segment."
      actions={
        <div class="controls">
          <Choice
            label="Interval"
            value={interval}
            onChange={(v) => setSalesInterval(v as typeof interval)}
            options={[...INTERVALS]}
            testId="sales-interval"
          />
          <Choice
            label="Payment method"
            value={segment.payment_method}
            onChange={set('payment_method')}
            options={[any('any'), ...METHODS.map((m) => ({ value: m, label: METHOD_LABELS[m] }))]}
            testId="sales-method"
          />
          <Choice label="Source" value={segment.source} onChange={set('source')} options={[any('any'), ...SOURCES]} testId="sales-source" />
          <Choice
            label="Billing"
            value={segment.billing_cycle}
            onChange={set('billing_cycle')}
            options={[any('any'), ...BILLING]}
            testId="sales-billing"
          />
          <Choice
            label="Currency"
            value={segment.currency}
            onChange={set('currency')}
            options={[any(`All (in ${me.reporting_currency})`), ...new Set([me.reporting_currency, ...CURRENCIES])]}
            testId="sales-currency"
          />
          <MetadataFilter value={metadata} onChange={setMetadata} label="Sales customer metadata filter" testId="sales-metadata" />
          <DownloadCsv
            fileName={`sales-${interval}-${range}.csv`}
            testId="sales-csv"
            page={() => csvPage(api.GET('/metrics/sales', { params: { query: salesQuery(params) }, ...AS_CSV }))}
          />
        </div>
      }
    >
      {(answer, loaded) => {
        const ccy = loaded.segment.currency || me.reporting_currency;
        const labels = answer.data.map((e) => (loaded.interval === 'month' ? e.date.slice(0, 7) : e.date));
        const span = window(loaded.range, loaded.zone);
        return (
          <>
            <p
              class="hint"
              data-testid="sales-window"
              data-interval={loaded.interval}
              data-range={loaded.range}
              data-segment={JSON.stringify(loaded.segment)}
              data-metadata={loaded.metadata ? `${loaded.metadata.key}=${loaded.metadata.value}` : ''}
            >
              Orders paid from {span.start_date} to {span.end_date} ({loaded.zone}), by {loaded.interval}, by payment time:{' '}
              {segmentWords(loaded.segment, me.reporting_currency)}
              {loaded.metadata ? `, of the customers whose metadata ${loaded.metadata.key} is “${loaded.metadata.value}”` : ''}. Refunds
              count on the day they were made.
            </p>
            <Figures
              data={answer.summary}
              currency={ccy}
              compact
              specs={[
                { key: 'gross_revenue', id: 'sales_gross', label: 'Gross revenue', kind: 'money', info: 'Orders paid in the range' },
                { key: 'refunds', id: 'sales_refunds', label: 'Refunds', kind: 'money', info: 'Refunded in the range' },
                { key: 'net_revenue', id: 'sales_net', label: 'Net revenue', kind: 'money', info: 'Gross less refunds' },
                { key: 'orders', id: 'sales_orders', label: 'Orders', kind: 'count', info: 'Created in the range, any status' },
                { key: 'paid_orders', id: 'sales_paid_orders', label: 'Paid orders', kind: 'count', info: 'Paid in the range' },
                { key: 'aov', id: 'sales_aov', label: 'Average order value', kind: 'money', info: 'Gross ÷ paid orders' },
                {
                  key: 'first_order_revenue',
                  id: 'sales_first',
                  label: 'First-time revenue',
                  kind: 'money',
                  info: "Customers' first paid orders",
                },
                { key: 'returning_revenue', id: 'sales_returning', label: 'Returning revenue', kind: 'money', info: 'Their later orders' },
                { key: 'new_buyers', id: 'sales_new_buyers', label: 'New buyers', kind: 'count', info: 'First paid order in the range' },
              ]}
            />
            <Unconverted testId="sales-unconverted" unconverted={answer.unconverted} />
            <div class="charts">
              <LineChart
                testId="sales-chart"
                labels={labels}
                lines={[
                  { label: 'Gross', color: '#1d6fb8', values: answer.data.map((e) => Number(e.gross_revenue)) },
                  { label: 'Refunds', color: '#c23b3b', values: answer.data.map((e) => Number(e.refunds)), dash: [4, 3] },
                  { label: 'Net', color: '#1b1f24', values: answer.data.map((e) => Number(e.net_revenue)) },
                ]}
                summary={`Chart: gross revenue, refunds and net revenue in ${ccy} over ${answer.data.length} ${loaded.interval}s; net ${money(answer.summary.net_revenue, ccy)} in all. The same figures are in the table below.`}
              />
              <LineChart
                testId="sales-returning-chart"
                labels={labels}
                lines={[
                  { label: 'First-time', color: '#8e6cc9', values: answer.data.map((e) => Number(e.first_order_revenue)) },
                  { label: 'Returning', color: '#3fa34d', values: answer.data.map((e) => Number(e.returning_revenue)), dash: [4, 3] },
                ]}
                summary={`Chart: revenue of first-time buyers (${money(answer.summary.first_order_revenue, ccy)}) and of returning ones (${money(answer.summary.returning_revenue, ccy)}) by ${loaded.interval}. The same figures are in the table below.`}
              />
            </div>
            <details class="data-table">
              <summary>Sales as a table</summary>
              <ListTable
                label="Sales by period"
                testId="sales-table"
                items={answer.data}
                rowKey={(e) => e.date}
                rowAttrs={(e) => ({ 'data-date': e.date, 'data-gross': e.gross_revenue, 'data-net': e.net_revenue })}
                columns={[
                  { label: 'Period from', cell: (e) => e.date },
                  { label: 'Gross', num: true, cell: (e) => money(e.gross_revenue, ccy) },
                  { label: 'Refunds', num: true, cell: (e) => money(e.refunds, ccy) },
                  { label: 'Net', num: true, cell: (e) => money(e.net_revenue, ccy) },
                  { label: 'Orders', num: true, cell: (e) => count(e.orders) },
                  { label: 'AOV', num: true, cell: (e) => money(e.aov, ccy) },
                  { label: 'First-time', num: true, cell: (e) => money(e.first_order_revenue, ccy) },
                  { label: 'Returning', num: true, cell: (e) => money(e.returning_revenue, ccy) },
                  { label: 'New buyers', num: true, cell: (e) => count(e.new_buyers) },
                ]}
              />
            </details>
          </>
        );
      }}
    </Panel>
  );
};

const PaymentMethodsPanel = ({ api, me, range }: { api: Api; me: Me; range: string }) => {
  const [result, retry] = useAsync({ range, zone: me.timezone }, (p) =>
    ok(api.GET('/metrics/payment-methods', { params: { query: window(p.range, p.zone) } })),
  );
  const ccy = me.reporting_currency;
  return (
    <Panel
      id="payment-methods"
      title="Payment methods"
      wide
      result={result}
      retry={retry}
      isEmpty={(a) => a.data.length === 0}
      empty="No orders in this range."
      actions={
        <DownloadCsv
          fileName={`payment-methods-${range}.csv`}
          testId="payment-methods-csv"
          page={() => csvPage(api.GET('/metrics/payment-methods', { params: { query: window(range, me.timezone) }, ...AS_CSV }))}
        />
      }
    >
      {(answer, loaded) => (
        <>
          <p class="hint" data-testid="payment-methods-note" data-range={loaded.range}>
            Orders created from {window(loaded.range, loaded.zone).start_date} to {window(loaded.range, loaded.zone).end_date} (
            {loaded.zone}) by how they were paid. Success rate: paid ÷ (paid + failed). Time to pay: the mean from creation to payment of
            the paid ones. Revenue in {ccy}.
          </p>
          <Unconverted testId="payment-methods-unconverted" unconverted={answer.unconverted} />
          <ListTable
            label="Payment methods"
            testId="payment-methods"
            items={answer.data}
            rowKey={(r) => r.payment_method}
            rowAttrs={(r) => ({
              'data-method': r.payment_method,
              'data-success-rate': r.success_rate === null ? '' : String(r.success_rate),
              'data-gross': r.gross_revenue,
              'data-seconds': r.avg_seconds_to_pay === null ? '' : String(r.avg_seconds_to_pay),
            })}
            columns={[
              { label: 'Method', cell: (r) => METHOD_LABELS[r.payment_method] },
              { label: 'Orders', num: true, cell: (r) => count(r.orders) },
              { label: 'Paid', num: true, cell: (r) => count(r.paid) },
              { label: 'Failed', num: true, cell: (r) => count(r.failed) },
              { label: 'Pending', num: true, cell: (r) => count(r.pending) },
              { label: 'Cancelled', num: true, cell: (r) => count(r.cancelled) },
              { label: 'Success rate', num: true, cell: (r) => percent(r.success_rate, 1) },
              { label: 'Gross revenue', num: true, cell: (r) => money(r.gross_revenue, ccy) },
              { label: 'Time to pay', num: true, cell: (r) => duration(r.avg_seconds_to_pay) },
            ]}
          />
        </>
      )}
    </Panel>
  );
};

const COHORT_METRICS = [
  { value: 'repeat_rate', label: 'Repeat rate' },
  { value: 'revenue_per_customer', label: 'Revenue per customer' },
];

const PurchaseCohortsPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [colour, setColour] = useState('repeat_rate');
  const today = todayIn(me.timezone);
  const months = { start_month: monthBefore(today, 11), end_month: monthBefore(today, 0) };
  const [result, retry] = useAsync(months, (p) => ok(api.GET('/metrics/purchase-cohorts', { params: { query: p } })));
  const ccy = me.reporting_currency;
  return (
    <Panel
      id="purchase-cohorts"
      title="Purchase cohorts"
      wide
      result={result}
      retry={retry}
      isEmpty={(a) => a.data.every((c) => c.customers === 0)}
      empty="No paid orders in the last 12 months."
      actions={
        <div class="controls">
          <Choice label="Colour by" value={colour} onChange={setColour} options={COHORT_METRICS} testId="cohort-colour" />
          <DownloadCsv
            fileName={`purchase-cohorts-${months.start_month}-to-${months.end_month}.csv`}
            testId="purchase-cohorts-csv"
            page={() => csvPage(api.GET('/metrics/purchase-cohorts', { params: { query: months }, ...AS_CSV }))}
          />
        </div>
      }
    >
      {(answer, loaded) => {
        const cohorts = answer.data.filter((c) => c.customers > 0);
        const width = Math.max(...cohorts.map((c) => c.periods.length));
        // Revenue per customer coloured against the largest in the table.
        const top = Math.max(1, ...cohorts.flatMap((c) => c.periods.map((p) => Number(p.revenue_per_customer ?? 0))));
        const shade = (p: (typeof cohorts)[number]['periods'][number]) =>
          colour === 'repeat_rate'
            ? heat(p.repeat_rate)
            : heat(p.revenue_per_customer === null ? null : (Number(p.revenue_per_customer) / top) * 100);
        return (
          <>
            <p class="hint" data-testid="purchase-cohorts-note" data-start={loaded.start_month} data-end={loaded.end_month}>
              Customers by the month of their first paid order ({loaded.start_month} to {loaded.end_month}), and for each month since: the
              share who have paid 2 orders or more by then (repeat rate), and the cohort's money paid so far per customer, in {ccy}. The
              darker the cell, the higher the {colour === 'repeat_rate' ? 'repeat rate' : 'revenue per customer'}.
            </p>
            <Unconverted testId="purchase-cohorts-unconverted" unconverted={answer.unconverted} />
            <CohortTable
              label="Purchase cohorts"
              caption="Repeat rate and revenue per customer of each month's first-time buyers, by months since their first order"
              testId="purchase-cohorts"
              className="purchase"
              cohorts={cohorts}
              name={(c) => c.cohort}
              customers={(c) => c.customers}
              width={width}
              cell={(c, i) => {
                const p = c.periods[i];
                if (!p) return <td key={i} class="cell" />;
                const rpc = money(p.revenue_per_customer, ccy);
                return (
                  <td
                    key={i}
                    class="num cell"
                    style={{ background: shade(p) }}
                    title={`${p.month}: ${count(p.buyers)} buyers, ${count(p.orders)} orders, ${money(p.gross_revenue, ccy)}; ${rpc} per customer`}
                    data-month={p.month}
                    data-repeat-rate={p.repeat_rate === null ? '' : String(p.repeat_rate)}
                    data-revenue-per-customer={p.revenue_per_customer ?? ''}
                  >
                    <span class="rate">{percent(p.repeat_rate, 1)}</span>
                    <span class="rpc">
                      <span aria-hidden="true">{compactMoney(p.revenue_per_customer, ccy) ?? rpc}</span>
                      <span class="visually-hidden">, {rpc} per customer</span>
                    </span>
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

export const Sales = ({ api, me }: { api: Api; me: Me }) => {
  const [range, setRange] = useState('12m');
  return (
    <div class="grid">
      <div class="segment-bar">
        <Choice
          label="Range"
          value={range}
          onChange={setRange}
          options={RANGES.map((r) => ({ value: r.id, label: r.label }))}
          testId="sales-range"
        />
        <p class="hint segment-note">The revenue and the payment methods cover this range; the cohorts, the last 12 months.</p>
      </div>
      <SalesPanel api={api} me={me} range={range} />
      <PaymentMethodsPanel api={api} me={me} range={range} />
      <PurchaseCohortsPanel api={api} me={me} />
    </div>
  );
};
