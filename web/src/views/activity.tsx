import { useState } from 'preact/hooks';
import { type EventType, ok, type OrderStatus, query, type Api, type Me } from '../api';
import { money, when } from '../format';
import { Choice, PagedTable, Panel, useAsync } from '../ui';

const ORDER_STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'];
const EVENT_TYPES = ['created', 'upgrade', 'downgrade', 'cancel', 'reactivated'];
const PER_PAGE = 10;

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
    <Panel
      id="orders"
      title="Recent orders"
      wide
      result={result}
      retry={retry}
      isEmpty={(p) => p.meta.total === 0}
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
    >
      {(p) => (
        <PagedTable
          label="Orders"
          testId="orders"
          cols={['Order', 'Customer', 'Amount', 'Status', 'Created']}
          page={p}
          onPage={setPage}
          row={(o) => (
            <tr key={o.id} data-order-no={o.order_no}>
              <th scope="row">{o.order_no}</th>
              <td>{o.customer_name ? `${o.customer_name} · ${o.customer_email}` : o.customer_email}</td>
              <td class="num" data-value={o.amount}>
                {money(o.amount, o.currency)}
              </td>
              <td>
                <span class={`badge ${o.status}`}>{o.status}</span>
              </td>
              <td>{when(o.created_at)}</td>
            </tr>
          )}
        />
      )}
    </Panel>
  );
};

const EventsPanel = ({ api, me }: { api: Api; me: Me }) => {
  const [eventType, setEventType] = useState<EventType | ''>('');
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ event_type: eventType, page }, (q) =>
    ok(api.GET('/subscriptions/events', { params: { query: query({ ...q, per_page: PER_PAGE }) } })),
  );
  return (
    <Panel
      id="events"
      title="Subscription events"
      wide
      result={result}
      retry={retry}
      isEmpty={(p) => p.meta.total === 0}
      empty="No subscription events match."
      actions={
        <Choice
          label="Type"
          value={eventType}
          onChange={(v) => {
            setEventType(v as EventType | '');
            setPage(1);
          }}
          options={[{ value: '', label: 'any' }, ...EVENT_TYPES]}
        />
      }
    >
      {(p) => (
        <PagedTable
          label="Subscription events"
          pagerLabel="Events"
          testId="events"
          cols={['When', 'Type', 'Customer', 'Plan', 'MRR change']}
          page={p}
          onPage={setPage}
          row={(e) => (
            <tr key={e.id}>
              <th scope="row">{when(e.occurred_at)}</th>
              <td>{e.event_type}</td>
              <td>#{e.customer_id}</td>
              <td>{e.new_plan ?? '—'}</td>
              <td class="num">
                {money(e.old_amount, me.reporting_currency)} → {money(e.new_amount, me.reporting_currency)} (
                {money(e.amount_change, me.reporting_currency)})
              </td>
            </tr>
          )}
        />
      )}
    </Panel>
  );
};

export const Activity = ({ api, me }: { api: Api; me: Me }) => (
  <div class="grid">
    <OrdersPanel api={api} />
    <EventsPanel api={api} me={me} />
  </div>
);
