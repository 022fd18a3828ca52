import { useState } from 'preact/hooks';
import { AS_CSV, type Api, csvPage, type Me, ok, query, type Subscription, type SubscriptionStatus } from '../api';
import { CSV_PAGE_SIZE } from '../csv';
import { money, when } from '../format';
import { Badge, Choice, type Column, CustomerLink, DownloadCsv, ListPanel, useAsync } from '../ui';

const STATUSES: SubscriptionStatus[] = ['active', 'paused', 'cancelled'];
const PER_PAGE = 20;

export const subscriptionTone = (status: SubscriptionStatus | null) =>
  status === 'active' ? 'good' : status === 'paused' ? 'warn' : 'off';

/** A subscription's end: cancelled (when), a cancellation scheduled ahead, or none. */
const ending = (s: Subscription) =>
  s.cancelled_at ? `cancelled ${when(s.cancelled_at)}` : s.cancel_at ? `cancels ${when(s.cancel_at)}` : '—';

/** A subscription as the list gives it, named by its customer's name and email (the customer's own page has neither). */
type Named = Subscription & { customer_name?: string | null; customer_email?: string | null };

/** A subscription's columns (the customer's own page leaves out the customer). */
export const subscriptionColumns = (withCustomer: boolean): Column<Named>[] => [
  { label: 'Plan', cell: (s) => s.plan_name },
  { label: 'Status', cell: (s) => <Badge status={s.status} tone={subscriptionTone(s.status)} /> },
  { label: 'MRR', num: true, cell: (s) => <span data-value={s.mrr}>{money(s.mrr, s.currency)}</span> },
  ...(withCustomer
    ? [{ label: 'Customer', cell: (s: Named) => <CustomerLink id={s.customer_id} name={s.customer_name} email={s.customer_email} /> }]
    : []),
  { label: 'Billing', cell: (s) => s.billing_cycle },
  { label: 'Started', cell: (s) => when(s.started_at) },
  { label: 'Cancellation', cell: ending },
];

type Filters = { status: SubscriptionStatus | ''; plan_name: string };

/** Subscriptions newest first, by status and plan (exact name), applied on submit and from page 1. */
export const Subscriptions = ({ api }: { api: Api; me: Me }) => {
  const [filters, setFilters] = useState<Filters>({ status: '', plan_name: '' });
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ ...filters, page }, (q) =>
    ok(api.GET('/subscriptions', { params: { query: query({ ...q, per_page: PER_PAGE }) } })),
  );
  const submit = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setFilters({ status: String(form.get('status') ?? '') as Filters['status'], plan_name: String(form.get('plan_name') ?? '').trim() });
    setPage(1);
  };
  return (
    <div class="grid">
      <ListPanel
        id="subscriptions"
        title="Subscriptions"
        result={result}
        retry={retry}
        empty="No subscriptions match."
        actions={
          <div class="controls">
            <form class="filters" onSubmit={submit} aria-label="Subscription filters">
              <Choice
                label="Status"
                name="status"
                defaultValue={filters.status}
                options={[{ value: '', label: 'any' }, ...STATUSES]}
                testId="subscription-status"
              />
              <label class="control">
                Plan (exact name)
                <input name="plan_name" type="text" defaultValue={filters.plan_name} autoComplete="off" maxLength={255} />
              </label>
              <button type="submit">Apply</button>
            </form>
            <DownloadCsv
              fileName="subscriptions.csv"
              testId="subscriptions-csv"
              page={(cursor) =>
                csvPage(api.GET('/subscriptions', { params: { query: query({ ...filters, per_page: CSV_PAGE_SIZE, cursor }) }, ...AS_CSV }))
              }
            />
          </div>
        }
        table={{
          label: 'Subscriptions',
          testId: 'subscriptions',
          columns: subscriptionColumns(true),
          onPage: setPage,
          rowKey: (s) => s.id,
          rowAttrs: (s) => ({ 'data-subscription-id': String(s.id) }),
        }}
      />
    </div>
  );
};
