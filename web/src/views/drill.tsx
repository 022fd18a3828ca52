import { useEffect, useState } from 'preact/hooks';
import { AS_CSV, type Api, csvPage, type MetricsMovement, type MovementType, ok } from '../api';
import { CSV_PAGE_SIZE } from '../csv';
import { count, money } from '../format';
import { type Column, CustomerLink, DownloadCsv, ListTable, Panel, useAsync } from '../ui';
import { activityColumns } from './customers';

/**
 * The drill-down of the overview's MRR table: the customers behind one movement figure of one
 * bucket (`GET /metrics/movements` over the bucket's days, of that type), newest first, twenty at a
 * time with *More* (the API's cursor), a CSV download of the same query and a close button.
 */
export const DRILL_PER_PAGE = 20;

/** A figure opened: its movement type and name, the bucket's days (the reporting zone's) and the figure itself. */
export type Drill = { type: MovementType; label: string; start: string; end: string; figure: string };

const days = (d: Drill) => (d.start === d.end ? d.start : `${d.start} to ${d.end}`);

const movementKey = (m: MetricsMovement) =>
  [m.date, m.customer_id, m.type, m.mrr_before, m.mrr_after, m.subscription_id ?? m.order_no].join('|');

const drillColumns = (ccy: string): Column<MetricsMovement>[] => [
  { label: 'Customer', cell: (m) => <CustomerLink id={m.customer_id} name={m.customer_name} email={m.customer_email} /> },
  // The type is the panel's own (its title names it).
  ...activityColumns(ccy).filter((c) => c.label !== 'Movement'),
];

type More = { rows: MetricsMovement[]; next?: string | null; busy: boolean; error: string };

export const DrillPanel = (props: { api: Api; drill: Drill; currency: string; zone: string; onClose: () => void }) => {
  const { api, drill, currency } = props;
  const q = { start_date: drill.start, end_date: drill.end, type: drill.type };
  const [first, retry] = useAsync(q, (p) => ok(api.GET('/metrics/movements', { params: { query: { ...p, per_page: DRILL_PER_PAGE } } })));
  // The pages after the first, appended by *More* (the panel is keyed by its drill, so a new one starts empty).
  const [more, setMore] = useState<More>({ rows: [], busy: false, error: '' });
  useEffect(() => document.getElementById('drill-title')?.focus(), []);
  const loadMore = async (cursor: string) => {
    setMore((m) => ({ ...m, busy: true, error: '' }));
    try {
      const page = await ok(api.GET('/metrics/movements', { params: { query: { ...q, per_page: DRILL_PER_PAGE, cursor } } }));
      setMore((m) => ({ rows: [...m.rows, ...page.data], next: page.meta.next_cursor, busy: false, error: '' }));
    } catch (err) {
      setMore((m) => ({ ...m, busy: false, error: (err as Error).message }));
    }
  };
  return (
    <Panel
      id="drill"
      title={`Customers behind ${drill.label.toLowerCase()} in ${days(drill)}`}
      wide
      focusable
      result={first}
      retry={retry}
      isEmpty={(p) => p.meta.total === 0}
      empty="No movements of this type in these days."
      actions={
        <div class="controls">
          <DownloadCsv
            fileName={`mrr-${drill.type}-${drill.start}-to-${drill.end}.csv`}
            testId="drill-csv"
            page={(cursor) =>
              csvPage(api.GET('/metrics/movements', { params: { query: { ...q, per_page: CSV_PAGE_SIZE, cursor } }, ...AS_CSV }))
            }
          />
          <button type="button" class="secondary" onClick={props.onClose} data-testid="drill-close">
            Close
          </button>
        </div>
      }
    >
      {(page) => {
        const rows = [...page.data, ...more.rows];
        const next = more.next === undefined ? page.meta.next_cursor : more.next;
        return (
          <>
            <p class="hint" data-testid="drill-note" data-type={drill.type} data-start={drill.start} data-end={drill.end}>
              Each customer's {drill.label.toLowerCase()} movement from {drill.start} to {drill.end} ({props.zone}), newest first, with the
              subscription or recurring order behind it; their amounts add up to the table's figure ({money(drill.figure, currency)}). Times
              in UTC. All revenue, in {currency}.
            </p>
            <ListTable
              label={`Customers behind ${drill.label.toLowerCase()}`}
              testId="drill"
              items={rows}
              rowKey={movementKey}
              rowAttrs={(m) => ({
                'data-customer-id': String(m.customer_id),
                'data-date': m.date,
                'data-amount': m.amount,
                'data-before': m.mrr_before,
                'data-after': m.mrr_after,
              })}
              columns={drillColumns(currency)}
            />
            <div class="more">
              <p aria-live="polite" data-testid="drill-count">
                Showing {count(rows.length)} of {count(page.meta.total)}
              </p>
              {next && (
                <button type="button" onClick={() => loadMore(next)} disabled={more.busy} data-testid="drill-more">
                  {more.busy ? 'Loading…' : 'More'}
                </button>
              )}
              {more.error && <p role="alert">Could not load more: {more.error}</p>}
            </div>
          </>
        );
      }}
    </Panel>
  );
};
