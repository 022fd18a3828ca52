import { useEffect, useState } from 'preact/hooks';
import { AS_CSV, type Api, type Customer, type CustomerActivity, csvPage, type Me, ok, query } from '../api';
import { CSV_PAGE_SIZE } from '../csv';
import { money, when } from '../format';
import { type Column, DownloadCsv, Figures, ListPanel, Panel, useAsync } from '../ui';
import { orderColumns } from './activity';
import { StatusBadge, subscriptionColumns } from './subscriptions';

/**
 * Customers: a search over name and email with each customer's MRR and subscription status, and a
 * customer's own page (`#customers/<id>`): its figures, subscriptions, orders and MRR movements.
 */
const PER_PAGE = 20;
const PAGE_OF_ONE = 10;

const status = (c: Customer) => (c.subscription_status ? <StatusBadge status={c.subscription_status} /> : 'no subscription');

const customerColumns = (ccy: string): Column<Customer>[] => [
  {
    label: 'Customer',
    cell: (c) => (
      <a href={`#customers/${c.id}`} class="customer">
        <span>{c.name ?? c.email}</span>
        {c.name && <span class="muted"> {c.email}</span>}
      </a>
    ),
  },
  { label: 'MRR', num: true, cell: (c) => money(c.mrr, ccy) },
  { label: 'Subscription', cell: status },
  { label: 'Customer since', cell: (c) => when(c.created_at) },
];

const CustomerList = ({ api, me }: { api: Api; me: Me }) => {
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ search, page }, (q) =>
    ok(api.GET('/customers', { params: { query: query({ ...q, per_page: PER_PAGE }) } })),
  );
  const submit = (e: Event) => {
    e.preventDefault();
    setSearch(String(new FormData(e.currentTarget as HTMLFormElement).get('search') ?? '').trim());
    setPage(1);
  };
  return (
    <ListPanel
      id="customers"
      title="Customers"
      result={result}
      retry={retry}
      empty={search ? `No customer's name or email contains "${search}".` : 'No customers yet.'}
      actions={
        <div class="controls">
          <form class="filters" onSubmit={submit} aria-label="Customer search">
            <label class="control">
              Name or email contains
              <input name="search" type="search" defaultValue={search} autoComplete="off" maxLength={255} data-testid="customer-search" />
            </label>
            <button type="submit">Search</button>
          </form>
          <DownloadCsv
            fileName="customers.csv"
            testId="customers-csv"
            page={(cursor) =>
              csvPage(api.GET('/customers', { params: { query: query({ search, per_page: CSV_PAGE_SIZE, cursor }) }, ...AS_CSV }))
            }
          />
        </div>
      }
      above={(loaded) =>
        loaded.search && (
          <p class="hint" data-search={loaded.search}>
            Customers whose name or email contains “{loaded.search}”.
          </p>
        )
      }
      table={{
        label: 'Customers',
        testId: 'customers',
        columns: customerColumns(me.reporting_currency),
        onPage: setPage,
        rowKey: (c) => c.id,
        rowAttrs: (c) => ({ 'data-customer-id': String(c.id), 'data-mrr': c.mrr }),
      }}
    />
  );
};

const MOVEMENT_NAMES: Record<CustomerActivity['type'], string> = {
  new: 'New',
  expansion: 'Expansion',
  contraction: 'Contraction',
  churn: 'Churn',
  reactivation: 'Reactivation',
};

/** The columns of an MRR movement (a customer's activities, the overview's drill-down). */
export const activityColumns = (ccy: string): Column<CustomerActivity>[] => [
  { label: 'Date', cell: (a) => when(a.date) },
  { label: 'Movement', cell: (a) => MOVEMENT_NAMES[a.type] },
  { label: 'Amount', num: true, cell: (a) => money(a.amount, ccy) },
  { label: 'MRR before → after', num: true, cell: (a) => `${money(a.mrr_before, ccy)} → ${money(a.mrr_after, ccy)}` },
  {
    label: 'Because of',
    cell: (a) => (a.subscription_id !== null ? `Subscription #${a.subscription_id}` : a.order_no !== null ? `Order ${a.order_no}` : '—'),
  },
];

/** A page of a customer's list (its subscriptions, orders or movements), loaded by page number. */
const usePaged = <T,>(id: string, load: (page: number) => Promise<T>) => {
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ id, page }, (p) => load(p.page));
  return { page, setPage, result, retry };
};

const CustomerPage = ({ api, me, id, onName }: { api: Api; me: Me; id: string; onName?: (name: string) => void }) => {
  const ccy = me.reporting_currency;
  const path = { idOrExternalId: id };
  const [customer, retryCustomer] = useAsync({ id }, () => ok(api.GET('/customers/{idOrExternalId}', { params: { path } })));
  // The view's heading names the customer as the lists do.
  const loaded = customer.state === 'ready' ? customer.data.data : null;
  useEffect(() => {
    if (loaded) onName?.(loaded.name ?? loaded.email);
  }, [loaded?.name, loaded?.email]);
  const customerId = Number(id);
  const subs = usePaged(id, (page) =>
    ok(api.GET('/subscriptions', { params: { query: { customer_id: customerId, page, per_page: PAGE_OF_ONE } } })),
  );
  const orders = usePaged(id, (page) =>
    ok(api.GET('/orders', { params: { query: { customer_id: customerId, page, per_page: PAGE_OF_ONE } } })),
  );
  const moves = usePaged(id, (page) =>
    ok(api.GET('/customers/{idOrExternalId}/activities', { params: { path, query: { page, per_page: PAGE_OF_ONE } } })),
  );
  return (
    <div class="grid">
      <p class="back">
        <a href="#customers">← All customers</a>
      </p>
      <Panel id="customer" title="Customer" wide result={customer} retry={retryCustomer}>
        {({ data: c }) => (
          <>
            <h3 class="customer-name" data-testid="customer-name">
              {c.name ?? c.email}
            </h3>
            <Figures
              data={c}
              currency={ccy}
              specs={[
                {
                  key: 'mrr',
                  id: 'customer_mrr',
                  label: 'MRR',
                  kind: 'money',
                  info: `Now, in ${ccy}: its subscriptions and running recurring orders`,
                },
                {
                  key: 'subscription_status',
                  id: 'customer_status',
                  label: 'Subscription',
                  kind: 'text',
                  info: 'Status now of its latest subscription',
                },
                {
                  key: 'ltv',
                  id: 'customer_ltv',
                  label: 'Lifetime value',
                  kind: 'money',
                  info: `Its paid orders in ${ccy}, refunds taken out`,
                },
                { key: 'order_count', id: 'customer_orders', label: 'Paid orders', kind: 'count', info: 'Orders paid now' },
              ]}
            />
            <dl class="token" data-testid="customer-details">
              <dt>Email</dt>
              <dd>{c.email}</dd>
              <dt>Customer since</dt>
              <dd>{when(c.created_at)}</dd>
              <dt>External id</dt>
              <dd>{c.external_id ?? '—'}</dd>
              <dt>Payments</dt>
              <dd>{c.first_payment_at ? `${when(c.first_payment_at)} to ${when(c.last_payment_at)}` : 'none yet'}</dd>
            </dl>
          </>
        )}
      </Panel>
      <ListPanel
        id="customer-subscriptions"
        title="Subscriptions"
        result={subs.result}
        retry={subs.retry}
        empty="No subscriptions."
        table={{
          label: 'Subscriptions of the customer',
          pagerLabel: 'Customer subscriptions',
          testId: 'customer-subscriptions',
          columns: subscriptionColumns(false),
          onPage: subs.setPage,
          rowKey: (s) => s.id,
          rowAttrs: (s) => ({ 'data-subscription-id': String(s.id) }),
        }}
      />
      <ListPanel
        id="customer-orders"
        title="Orders"
        result={orders.result}
        retry={orders.retry}
        empty="No orders."
        table={{
          label: 'Orders of the customer',
          pagerLabel: 'Customer orders',
          testId: 'customer-orders',
          columns: orderColumns(false),
          onPage: orders.setPage,
          rowKey: (o) => o.id,
          rowAttrs: (o) => ({ 'data-order-no': o.order_no }),
        }}
      />
      <ListPanel
        id="activities"
        title="MRR movements"
        result={moves.result}
        retry={moves.retry}
        empty="No MRR movements: the customer never had recurring revenue."
        above={() => <p class="hint">Newest first, each classified as the MRR figures count it; the amounts add up to its MRR now.</p>}
        table={{
          label: 'MRR movements',
          pagerLabel: 'Movements',
          testId: 'activities',
          columns: activityColumns(ccy),
          onPage: moves.setPage,
          rowKey: (a) => `${a.date}-${a.type}-${a.mrr_after}`,
          rowAttrs: (a) => ({
            'data-date': a.date,
            'data-type': a.type,
            'data-amount': a.amount,
            'data-before': a.mrr_before,
            'data-after': a.mrr_after,
          }),
        }}
      />
    </div>
  );
};

/** `#customers` lists and searches; `#customers/<id>` is one customer's page. */
export const Customers = ({ api, me, arg, onName }: { api: Api; me: Me; arg?: string; onName?: (name: string) => void }) =>
  arg ? <CustomerPage key={arg} api={api} me={me} id={arg} onName={onName} /> : <CustomerList api={api} me={me} />;
