import { useEffect, useState } from 'preact/hooks';
import { ok, type ActivityEntry, type ActivityPage, type ActivityType, type Api, type ItemReport, type Me } from '../api';
import { saveFile, toCsv } from '../csv';
import { count, when } from '../format';
import { Figure, Head, Pager, Panel, TableScroll, useAsync } from '../ui';

/**
 * Imports: the activity log (one entry per batch request, kept 13 months) grouped by import run
 * (`X-Import-Run`, which `ops import` sends), newest first; a batch sent without a run is a line of
 * its own. A batch or a whole run opens its failed and skipped items, and its failed items download
 * as CSV.
 */
const PER_PAGE = 20;
/** A run's batches are read 100 a request; past this many requests the panel shows the newest only, and says so. */
const MAX_RUN_PAGES = 20;

const TYPES: Record<ActivityType, string> = {
  'customers.batch': 'Customers',
  'orders.batch': 'Orders',
  'subscriptions.batch': 'Subscriptions',
  'subscription_events.batch': 'Subscription events',
};
const COUNTS = ['total', 'created', 'updated', 'skipped', 'failed'] as const;
type Counts = Pick<ActivityEntry, (typeof COUNTS)[number]>;
type Selection = { kind: 'batch'; id: number } | { kind: 'run'; run: string };
type Group = { run: string | null; entries: ActivityEntry[] };

/** Entries (newest first) grouped by run, each group where its newest entry stands; an entry without a run is a group alone. */
const groupByRun = (entries: ActivityEntry[]): Group[] => {
  const groups: Group[] = [];
  const byRun = new Map<string, Group>();
  for (const e of entries) {
    const group = e.import_run === null ? undefined : byRun.get(e.import_run);
    if (group) group.entries.push(e);
    else {
      const created = { run: e.import_run, entries: [e] };
      groups.push(created);
      if (e.import_run !== null) byRun.set(e.import_run, created);
    }
  }
  return groups;
};

const sum = (entries: ActivityEntry[]): Counts =>
  Object.fromEntries(COUNTS.map((k) => [k, entries.reduce((n, e) => n + e[k], 0)])) as Counts;
const plural = (n: number, word: string) => `${count(n)} ${word}${n === 1 ? '' : 'es'}`;
const sameSelection = (a: Selection | null, b: Selection) => a !== null && JSON.stringify(a) === JSON.stringify(b);

const CountCells = ({ counts }: { counts: Counts }) => (
  <>
    {COUNTS.map((k) => (
      <td key={k} class="num" data-count={k}>
        {count(counts[k])}
      </td>
    ))}
  </>
);

const SelectButton = ({ label, name, pressed, onClick }: { label: string; name: string; pressed: boolean; onClick: () => void }) => (
  <button type="button" aria-pressed={pressed} onClick={onClick}>
    {label}
    <span class="visually-hidden"> {name}</span>
  </button>
);

const RunsTable = ({
  page,
  selected,
  onSelect,
  onPage,
}: {
  page: ActivityPage;
  selected: Selection | null;
  onSelect: (s: Selection) => void;
  onPage: (page: number) => void;
}) => {
  const groups = groupByRun(page.data);
  const { current_page, last_page } = page.meta;
  return (
    <>
      <TableScroll label="Import runs and batches">
        <table data-testid="runs" aria-labelledby="runs-title">
          <Head
            cols={['Batch', 'Type', 'Sent', 'Total', 'Created', 'Updated', 'Skipped', 'Failed', <span class="visually-hidden">Items</span>]}
          />
          {groups.map((g, i) => {
            const run = g.run;
            // A run at the page's edge may have more batches on the neighbouring page; its own items panel reads them all.
            const more = (i === 0 && current_page > 1 ? ['previous'] : []).concat(
              i === groups.length - 1 && current_page < last_page ? ['next'] : [],
            );
            return (
              <tbody key={run ?? `batch-${g.entries[0].id}`} data-run={run ?? ''}>
                {run !== null && (
                  <tr class="run" data-testid="run-row" aria-current={sameSelection(selected, { kind: 'run', run }) ? 'true' : undefined}>
                    <th scope="rowgroup" colSpan={3}>
                      Run <code>{run}</code> · {plural(g.entries.length, 'batch')}
                      {more.length > 0 && <span class="muted"> here; it may continue on the {more.join(' and ')} page</span>}
                    </th>
                    <CountCells counts={sum(g.entries)} />
                    <td>
                      <SelectButton
                        label="Run items"
                        name={`of ${run}`}
                        pressed={sameSelection(selected, { kind: 'run', run })}
                        onClick={() => onSelect({ kind: 'run', run })}
                      />
                    </td>
                  </tr>
                )}
                {g.entries.map((e) => (
                  <tr key={e.id} data-batch={e.id} aria-current={sameSelection(selected, { kind: 'batch', id: e.id }) ? 'true' : undefined}>
                    <th scope="row">
                      #{e.id}
                      {run === null && <span class="muted"> · no run</span>}
                    </th>
                    <td>{TYPES[e.type]}</td>
                    <td>{when(e.created_at)}</td>
                    <CountCells counts={e} />
                    <td>
                      <SelectButton
                        label="Items"
                        name={`of batch #${e.id}`}
                        pressed={sameSelection(selected, { kind: 'batch', id: e.id })}
                        onClick={() => onSelect({ kind: 'batch', id: e.id })}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            );
          })}
        </table>
      </TableScroll>
      <Pager meta={page.meta} onPage={onPage} label="Batches" />
    </>
  );
};

type Row = ItemReport & { batch: ActivityEntry };
const rowsOf = (entries: ActivityEntry[], kind: 'failed' | 'skipped'): Row[] =>
  entries.flatMap((batch) => batch.results[kind].map((r) => ({ ...r, batch })));

const ItemTable = ({ id, title, rows, withBatch }: { id: string; title: string; rows: Row[]; withBatch: boolean }) => (
  <div class="items">
    <h3 id={`${id}-title`}>
      {title} ({count(rows.length)})
    </h3>
    {rows.length === 0 ? (
      <p class="state empty">None.</p>
    ) : (
      <TableScroll label={title}>
        <table data-testid={id} aria-labelledby={`${id}-title`}>
          <Head cols={[...(withBatch ? ['Batch'] : []), 'Index', 'Identifier', 'Reason', 'Message']} />
          <tbody>
            {rows.map((r) => (
              <tr key={`${r.batch.id}-${r.index}`} data-batch={r.batch.id} data-index={r.index}>
                {withBatch && (
                  <td>
                    #{r.batch.id} · {TYPES[r.batch.type]}
                  </td>
                )}
                <th scope="row">{r.index}</th>
                <td>{r.identifier}</td>
                <td>
                  <code>{r.reason}</code>
                </td>
                <td class="wrap">{r.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    )}
  </div>
);

/** The failed items as CSV: `index,identifier,reason,message` for a batch; a run's rows also name their batch and its type. */
const failedCsv = (rows: Row[], withBatch: boolean) =>
  withBatch
    ? toCsv(
        ['batch', 'type', 'index', 'identifier', 'reason', 'message'],
        rows.map((r) => [r.batch.id, r.batch.type, r.index, r.identifier, r.reason, r.message]),
      )
    : toCsv(
        ['index', 'identifier', 'reason', 'message'],
        rows.map((r) => [r.index, r.identifier, r.reason, r.message]),
      );

/** What a batch or a run holds: its counts, the failed items (downloadable) and the skipped ones. */
const Items = ({ entries, withBatch, fileName }: { entries: ActivityEntry[]; withBatch: boolean; fileName: string }) => {
  const failed = rowsOf(entries, 'failed');
  const counts = sum(entries);
  return (
    <>
      <dl class="figures compact">
        {COUNTS.map((k) => (
          <Figure key={k} id={`items-${k}`} label={k[0].toUpperCase() + k.slice(1)} value={count(counts[k])} raw={counts[k]} />
        ))}
      </dl>
      <div class="actions">
        <button
          type="button"
          data-testid="download-failed"
          disabled={failed.length === 0}
          onClick={() => saveFile(fileName, failedCsv(failed, withBatch))}
        >
          Download failed items (CSV)
        </button>
      </div>
      <ItemTable id="failed-items" title="Failed items" rows={failed} withBatch={withBatch} />
      <ItemTable id="skipped-items" title="Skipped items" rows={rowsOf(entries, 'skipped')} withBatch={withBatch} />
    </>
  );
};

const BatchItems = ({ api, id }: { api: Api; id: number }) => {
  const [result, retry] = useAsync({ id }, (p) => ok(api.GET('/activity/{id}', { params: { path: { id: p.id } } })).then((r) => r.data));
  return (
    <Panel id="items" title={`Batch #${id}`} wide focusable result={result} retry={retry}>
      {(e) => (
        <>
          <p class="hint" data-testid="items-of">
            {TYPES[e.type]} · sent {when(e.created_at)} ·{' '}
            {e.import_run ? (
              <>
                run <code>{e.import_run}</code>
              </>
            ) : (
              'no import run'
            )}
          </p>
          <Items entries={[e]} withBatch={false} fileName={`failed-items-batch-${e.id}.csv`} />
        </>
      )}
    </Panel>
  );
};

/** Every batch of a run (oldest first), through the cursor, at most MAX_RUN_PAGES requests. */
const loadRun = async (api: Api, run: string) => {
  const entries: ActivityEntry[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < MAX_RUN_PAGES; n++) {
    const page = await ok(api.GET('/activity', { params: { query: { import_run: run, per_page: 100, cursor } } }));
    entries.push(...page.data);
    cursor = page.meta.next_cursor ?? undefined;
    if (!cursor) return { entries: entries.reverse(), complete: true };
  }
  return { entries: entries.reverse(), complete: false };
};

const RunItems = ({ api, run }: { api: Api; run: string }) => {
  const [result, retry] = useAsync({ run }, (p) => loadRun(api, p.run));
  return (
    <Panel
      id="items"
      title={`Run ${run}`}
      wide
      focusable
      result={result}
      retry={retry}
      isEmpty={(r) => r.entries.length === 0}
      empty="No batches of this run in the last 13 months."
    >
      {(r) => (
        <>
          <p class="hint" data-testid="items-of">
            {plural(r.entries.length, 'batch')}, {when(r.entries[0].created_at)} to {when(r.entries[r.entries.length - 1].created_at)}
            {!r.complete &&
              ' (the newest only: the run has more batches than the dashboard reads at once; GET /v1/activity?import_run= lists them all)'}
          </p>
          <Items entries={r.entries} withBatch fileName={`failed-items-${run}.csv`} />
        </>
      )}
    </Panel>
  );
};

export const Imports = ({ api }: { api: Api; me: Me }) => {
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ page }, (q) => ok(api.GET('/activity', { params: { query: { ...q, per_page: PER_PAGE } } })));
  const [selected, setSelected] = useState<Selection | null>(null);
  // The items panel opens on a choice: focus moves to its heading (it is remounted per choice).
  useEffect(() => {
    if (selected) document.getElementById('items-title')?.focus();
  }, [selected]);
  return (
    <div class="grid">
      <Panel
        id="runs"
        title="Import runs and batches"
        wide
        result={result}
        retry={retry}
        isEmpty={(p) => p.meta.total === 0}
        empty="No batches in the last 13 months. ops import and the batch endpoints write here."
      >
        {(p) => <RunsTable page={p} selected={selected} onSelect={setSelected} onPage={setPage} />}
      </Panel>
      {selected?.kind === 'batch' && <BatchItems key={`batch-${selected.id}`} api={api} id={selected.id} />}
      {selected?.kind === 'run' && <RunItems key={`run-${selected.run}`} api={api} run={selected.run} />}
    </div>
  );
};
