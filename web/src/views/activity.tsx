import { useState } from 'preact/hooks';
import { type EventType, ok, type Order, type OrderStatus, query, type Api, type Me, type SubscriptionEvent } from '../api';
import { money, when, words } from '../format';
import { Choice, type Column, ListPanel, useAsync } from '../ui';

const ORDER_STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'];
/** Every event type: the five a merchant records, and those of trials and failed renewals. */
const EVENT_TYPES: EventType[] = [
  'created',
  'upgrade',
  'downgrade',
  'cancel',
  'reactivated',
  'trial_converted',
  'trial_cancelled',
  'past_due',
  'recovered',
];
const PER_PAGE = 10;

/** An order's columns (the customer's own page leaves out the customer). */
export const orderColumns = (withCustomer: boolean): Column<Order>[] => [
  { label: 'Order', cell: (o) => o.order_no },
  ...(withCustomer
    ? [{ label: 'Customer', cell: (o: Order) => (o.customer_name ? `${o.customer_name} · ${o.customer_email}` : o.customer_email) }]
    : []),
  { label: 'Amount', num: true, cell: (o) => <span data-value={o.amount}>{money(o.amount, o.currency)}</span> },
  { label: 'Status', cell: (o) => <span class={`badge ${o.status}`}>{o.status}</span> },
  { label: 'Created', cell: (o) => when(o.created_at) },
];

const eventColumns = (ccy: string): Column<SubscriptionEvent>[] => [
  { label: 'When', cell: (e) => when(e.occurred_at) },
  { label: 'Type', cell: (e) => words(e.event_type) },
  { label: 'Customer', cell: (e) => <a href={`#customers/${e.customer_id}`}>#{e.customer_id}</a> },
  { label: 'Plan', cell: (e) => e.new_plan ?? '—' },
  {
    label: 'MRR change',
    num: true,
    cell: (e) => `${money(e.old_amount, ccy)} → ${money(e.new_amount, ccy)} (${money(e.amount_change, ccy)})`,
  },
];

type OrderFilters = { status: OrderStatus | ''; customer_email: string; start_date: string; end_date: string };

/** Filters are applied on submit (not per keystroke), and always from page 1. */
const OrdersPanel = ({ api }: { api: Api }) => {
  const [filters, setFilters] = useState<OrderFilters>({ status: '', customer_email: '', start_date: '', end_date: '' });
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ ...filters, page }, (q) =>
    ok(api.GET('/orders', { params: { query: query({ ...q, per_page: PER_PAGE }) } })),
  );
  const submit = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setFilters(Object.fromEntries(Object.keys(filters).map((k) => [k, String(form.get(k) ?? '').trim()])) as OrderFilters);
    setPage(1);
  };
  return (
    <ListPanel
      id="orders"
      title="Recent orders"
      result={result}
      retry={retry}
      empty="No orders match."
      actions={
        <form class="filters" onSubmit={submit} aria-label="Order filters">
          <Choice label="Status" name="status" defaultValue={filters.status} options={[{ value: '', label: 'any' }, ...ORDER_STATUSES]} />
          <label class="control">
            Customer email
            <input name="customer_email" type="email" defaultValue={filters.customer_email} autoComplete="off" />
          </label>
          <label class="control">
            From
            <input name="start_date" type="date" defaultValue={filters.start_date} />
          </label>
          <label class="control">
            To
            <input name="end_date" type="date" defaultValue={filters.end_date} />
          </label>
          <button type="submit">Apply</button>
        </form>
      }
      table={{
        label: 'Orders',
        testId: 'orders',
        columns: orderColumns(true),
        onPage: setPage,
        rowKey: (o) => o.id,
        rowAttrs: (o) => ({ 'data-order-no': o.order_no }),
      }}
    />
  );
};

const EventsPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [eventType, setEventType] = useState<EventType | ''>('');
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ event_type: eventType, page }, (q) =>
    ok(api.GET('/subscriptions/events', { params: { query: query({ ...q, per_page: PER_PAGE }) } })),
  );
  return (
    <ListPanel
      id="events"
      title="Subscription events"
      result={result}
      retry={retry}
      empty="No subscription events match."
      actions={
        <Choice
          label="Type"
          value={eventType}
          onChange={(v) => {
            setEventType(v as EventType | '');
            setPage(1);
          }}
          options={[{ value: '', label: 'any' }, ...EVENT_TYPES.map((v) => ({ value: v, label: words(v) }))]}
          testId="event-type"
        />
      }
      table={{
        label: 'Subscription events',
        pagerLabel: 'Events',
        testId: 'events',
        columns: eventColumns(me.reporting_currency),
        onPage: setPage,
        rowKey: (e) => e.id,
      }}
    />
  );
};

export const Activity = ({ api, me }: { api: Api; me: Me }) => (
  <div class="grid">
    <OrdersPanel api={api} />
    <EventsPanel api={api} me={me} />
  </div>
);
