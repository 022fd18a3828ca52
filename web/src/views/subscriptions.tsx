import { useState } from 'preact/hooks';
import {
  AS_CSV,
  type Api,
  csvPage,
  type Me,
  ok,
  query,
  type Subscription,
  type SubscriptionListItem,
  type SubscriptionStatus,
} from '../api';
import { CSV_PAGE_SIZE } from '../csv';
import { count, daysUntil, money, plusDays, when, words } from '../format';
import { Badge, Choice, type Column, CustomerLink, DownloadCsv, ListPanel, useAsync } from '../ui';

/** Every status, in a subscription's order of life: a trial, paying, a failed renewal, paused, cancelled. */
const STATUSES: SubscriptionStatus[] = ['trialing', 'active', 'past_due', 'paused', 'cancelled'];
const PER_PAGE = 20;

const TONES: Record<SubscriptionStatus, 'good' | 'warn' | 'bad' | 'off' | 'info'> = {
  trialing: 'info',
  active: 'good',
  past_due: 'bad',
  paused: 'warn',
  cancelled: 'off',
};
export const subscriptionTone = (status: SubscriptionStatus | null) => (status ? TONES[status] : 'off');

/** A subscription's status as a badge, in words (`past due`). */
export const StatusBadge = ({ status }: { status: SubscriptionStatus }) => <Badge status={words(status)} tone={subscriptionTone(status)} />;

/** A subscription's end: cancelled (when), a cancellation scheduled ahead, or none. */
const ending = (s: Subscription) =>
  s.cancelled_at ? `cancelled ${when(s.cancelled_at)}` : s.cancel_at ? `cancels ${when(s.cancel_at)}` : '—';

/** A status, and while trialing when the trial ends (it converts then), while past due since when. */
const statusCell = (s: Subscription) => (
  <>
    <StatusBadge status={s.status} />
    {s.status === 'trialing' && s.trial_ends_at && <span class="muted"> until {when(s.trial_ends_at)}</span>}
    {s.status === 'past_due' && s.failed_at && <span class="muted"> since {when(s.failed_at)}</span>}
  </>
);

/** A subscription as the list gives it, named by its customer's name and email (the customer's own page has neither). */
type Named = Subscription & { customer_name?: string | null; customer_email?: string | null };

/** A subscription's columns (the customer's own page leaves out the customer). */
export const subscriptionColumns = (withCustomer: boolean): Column<Named>[] => [
  { label: 'Plan', cell: (s) => s.plan_name },
  { label: 'Status', cell: statusCell },
  { label: 'MRR', num: true, cell: (s) => <span data-value={s.mrr}>{money(s.mrr, s.currency)}</span> },
  ...(withCustomer
    ? [{ label: 'Customer', cell: (s: Named) => <CustomerLink id={s.customer_id} name={s.customer_name} email={s.customer_email} /> }]
    : []),
  { label: 'Billing', cell: (s) => s.billing_cycle },
  { label: 'Started', cell: (s) => when(s.started_at) },
  { label: 'Cancellation', cell: ending },
];

/**
 * The subscriptions past due now (a renewal payment failed, not recovered yet), newest first as the
 * list gives them: who, the plan, the MRR at risk, when the renewal failed, and when it is cancelled
 * as delinquent (failed_at + the merchant's delinquency_days, GET /settings) unless recovered, in
 * days from now.
 */
const PastDuePanel = ({ api }: { api: Api }) => {
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ page }, async (q) => {
    const [list, settings] = await Promise.all([
      ok(api.GET('/subscriptions', { params: { query: { status: 'past_due', per_page: PER_PAGE, page: q.page } } })),
      ok(api.GET('/settings')),
    ]);
    return { ...list, days: settings.data.delinquency_days };
  });
  const days = result.state === 'ready' ? result.data.days : null;
  const dueAt = (s: SubscriptionListItem) => (s.failed_at && days !== null ? plusDays(s.failed_at, days) : null);
  const left = (s: SubscriptionListItem) => {
    const at = dueAt(s);
    if (!at) return '—';
    const n = daysUntil(at);
    return n <= 0 ? 'due now' : `in ${count(n)} ${n === 1 ? 'day' : 'days'}`;
  };
  return (
    <ListPanel
      id="past-due"
      title="Past due: failed renewals"
      result={result}
      retry={retry}
      empty="No subscription is past due."
      above={() => (
        <p class="hint" data-testid="past-due-note" data-days={days ?? ''}>
          Their renewal payment failed: their MRR still counts until the payment is recovered; otherwise each is cancelled as delinquent{' '}
          {count(days ?? 0)} days after the failure (the merchant's delinquency period), which counts as delinquent churn.
        </p>
      )}
      table={{
        label: 'Past-due subscriptions',
        pagerLabel: 'Past due',
        testId: 'past-due',
        columns: [
          { label: 'Customer', cell: (s) => <CustomerLink id={s.customer_id} name={s.customer_name} email={s.customer_email} /> },
          { label: 'Plan', cell: (s) => s.plan_name },
          { label: 'MRR', num: true, cell: (s) => money(s.mrr, s.currency) },
          { label: 'Failed', cell: (s) => when(s.failed_at) },
          { label: 'Cancelled as delinquent', cell: (s) => when(dueAt(s)) },
          { label: 'Days left', num: true, cell: left },
        ],
        onPage: setPage,
        rowKey: (s) => s.id,
        rowAttrs: (s) => ({
          'data-subscription-id': String(s.id),
          'data-mrr': s.mrr,
          'data-failed-at': s.failed_at ?? '',
          'data-delinquent-at': dueAt(s) ?? '',
        }),
      }}
    />
  );
};

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
      <PastDuePanel api={api} />
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
                options={[{ value: '', label: 'any' }, ...STATUSES.map((v) => ({ value: v, label: words(v) }))]}
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
