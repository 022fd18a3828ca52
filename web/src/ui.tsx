import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Meta, Page } from './api';
import { allPagesCsv, CSV_MAX_PAGES, CSV_PAGE_SIZE, type CsvPage, saveFile } from './csv';
import { amounts, compactMoney, count, customerLabel, money, percent, ratio } from './format';
import type { MetadataPair } from './segment';

/** A load's state, always naming the parameters it belongs to. */
export type Async<T, P = null> = { params: P } & ({ state: 'loading' } | { state: 'error'; error: Error } | { state: 'ready'; data: T });

/**
 * Runs `load(params)` whenever `params` change by value (and on `reload`). The answer is kept with
 * the parameters and reload it was loaded for, and the result is read against the current ones in
 * the render itself: the render that changes a parameter is already `loading`, so no frame shows an
 * answer under parameters it was not loaded for. An older answer never replaces a newer one.
 */
export const useAsync = <T, P = null>(params: P, load: (params: P) => Promise<T>): [Async<T, P>, () => void] => {
  const key = JSON.stringify(params);
  const [tick, setTick] = useState(0);
  const [settled, setSettled] = useState<{ key: string; tick: number; result: Async<T, P> } | null>(null);
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    const settle = (result: Async<T, P>) => run === latest.current && setSettled({ key, tick, result });
    load(params).then(
      (data) => settle({ params, state: 'ready', data }),
      (error: Error) => settle({ params, state: 'error', error }),
    );
  }, [key, tick]);
  const result: Async<T, P> = settled && settled.key === key && settled.tick === tick ? settled.result : { params, state: 'loading' };
  return [result, useCallback(() => setTick((t) => t + 1), [])];
};

/**
 * A card with its three states: loading (aria-busy), error (with a retry), and the content, which
 * renders its own empty state through `isEmpty`/`empty`. `data-state` and everything in the content
 * describe the loaded answer.
 */
export const Panel = <T, P>(props: {
  title: string;
  id: string;
  result: Async<T, P>;
  retry?: () => void;
  isEmpty?: (data: T) => boolean;
  empty?: string;
  actions?: ComponentChildren;
  wide?: boolean;
  /** The heading can take focus (a panel opened by a choice elsewhere moves focus to it). */
  focusable?: boolean;
  /** The content, given the answer and the parameters it was loaded for (label it with those, not the controls' state). */
  children: (data: T, params: P) => ComponentChildren;
}) => {
  const { result } = props;
  return (
    <section
      class={`panel${props.wide ? ' wide' : ''}`}
      aria-labelledby={`${props.id}-title`}
      aria-busy={result.state === 'loading'}
      data-panel={props.id}
      data-state={result.state}
    >
      <header class="panel-head">
        <h2 id={`${props.id}-title`} tabIndex={props.focusable ? -1 : undefined}>
          {props.title}
        </h2>
        {props.actions}
      </header>
      {result.state === 'loading' && <p class="state loading">Loading…</p>}
      {result.state === 'error' && (
        <div class="state error" role="alert">
          <p>Could not load: {result.error.message}</p>
          {props.retry && (
            <button type="button" onClick={props.retry}>
              Try again
            </button>
          )}
        </div>
      )}
      {result.state === 'ready' &&
        (props.isEmpty?.(result.data) ? (
          <p class="state empty">{props.empty ?? 'Nothing yet.'}</p>
        ) : (
          props.children(result.data, result.params)
        ))}
    </section>
  );
};

/** A table that scrolls sideways on narrow screens (focusable, so the keyboard can scroll it). */
export const TableScroll = ({ label, children }: { label: string; children: ComponentChildren }) => (
  // biome-ignore lint/a11y/useSemanticElements: a named scroll region around a table, the pattern axe's scrollable-region-focusable asks for
  // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus so the keyboard can scroll it
  <div class="table-scroll" tabIndex={0} role="region" aria-label={`${label} (table)`}>
    {children}
  </div>
);

type Option = string | { value: string; label: string };
/** A labelled select: controlled (`value` + `onChange`) or a form field (`name` + `defaultValue`). */
export const Choice = (props: {
  label: string;
  options: Option[];
  value?: string;
  onChange?: (value: string) => void;
  name?: string;
  defaultValue?: string;
  testId?: string;
}) => (
  <label class="control">
    {props.label}
    <select
      name={props.name}
      value={props.value}
      defaultValue={props.defaultValue}
      onChange={props.onChange && ((e) => props.onChange!(e.currentTarget.value))}
      data-testid={props.testId}
    >
      {props.options.map((o) => {
        const { value, label } = typeof o === 'string' ? { value: o, label: o } : o;
        return (
          <option key={value} value={value}>
            {label}
          </option>
        );
      })}
    </select>
  </label>
);

/** The messages of a 422 for a field and its items (`events`, `events.1`). */
export const messagesFor = (errors: Record<string, string[]>, field: string) =>
  Object.entries(errors)
    .filter(([k]) => k === field || k.startsWith(`${field}.`))
    .flatMap(([, m]) => m);

/** A labelled input with its hint and the API's messages for it (aria-invalid, described by them: `<id>-hint`, `<id>-error`). */
export const Field = (props: {
  id: string;
  name: string;
  label: string;
  type: string;
  value?: string;
  errors: string[];
  required?: boolean;
  hint?: string;
  maxLength?: number;
  inputMode?: 'text' | 'decimal';
  /** A datalist of suggestions (its id). */
  list?: string;
  testId?: string;
}) => {
  const { id } = props;
  const described = [props.hint ? `${id}-hint` : '', props.errors.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type}
        defaultValue={props.value}
        required={props.required}
        maxLength={props.maxLength}
        inputMode={props.inputMode}
        list={props.list}
        autoComplete="off"
        aria-invalid={props.errors.length > 0}
        aria-describedby={described || undefined}
        data-testid={props.testId}
      />
      {props.hint && (
        <p id={`${id}-hint`} class="hint">
          {props.hint}
        </p>
      )}
      {props.errors.length > 0 && (
        <p id={`${id}-error`} class="field-error">
          {props.errors.join(' ')}
        </p>
      )}
    </div>
  );
};

/** A table's column headings. */
export const Head = ({ cols }: { cols: ComponentChildren[] }) => (
  <thead>
    <tr>
      {cols.map((c, i) => (
        <th scope="col" key={i}>
          {c}
        </th>
      ))}
    </tr>
  </thead>
);

export const Pager = ({ meta, onPage, label }: { meta: Meta; onPage: (page: number) => void; label: string }) => (
  <nav class="pager" aria-label={`${label} pages`}>
    <button type="button" disabled={meta.current_page <= 1} onClick={() => onPage(meta.current_page - 1)}>
      Previous
    </button>
    <span aria-live="polite" data-testid={`${label.toLowerCase().replace(/\s+/g, '-')}-page`}>
      Page {meta.current_page} of {meta.last_page} · {meta.total} in all
    </span>
    <button type="button" disabled={meta.current_page >= meta.last_page} onClick={() => onPage(meta.current_page + 1)}>
      Next
    </button>
  </nav>
);

/**
 * A column of a list: its heading, the cell of an item, and whether it is a number (right-aligned).
 * The first column is the row's heading (`th scope="row"`). `hideLabel`: the heading is for screen
 * readers only (a column of buttons).
 */
export type Column<T> = { label: string; cell: (item: T) => ComponentChildren; num?: boolean; hideLabel?: boolean };

/**
 * A list as a table, one item a row. At phone width (styles.css, `table.stack`) each row becomes a
 * card and each cell is shown under its column's name (`data-label`), so no column needs sideways
 * scrolling to be seen.
 */
export const ListTable = <T,>(props: {
  label: string;
  testId: string;
  columns: Column<T>[];
  items: T[];
  rowKey: (item: T) => string | number;
  /** Attributes of an item's row (what the end-to-end test reads, `aria-current`). */
  rowAttrs?: (item: T) => Record<string, string | undefined>;
}) => (
  <TableScroll label={props.label}>
    <table class="stack" data-testid={props.testId}>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th scope="col" key={c.label} class={c.num ? 'num' : undefined}>
              {c.hideLabel ? <span class="visually-hidden">{c.label}</span> : c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.items.map((item) => (
          <tr key={props.rowKey(item)} {...props.rowAttrs?.(item)}>
            {props.columns.map((c, i) => {
              const label = c.hideLabel ? undefined : c.label;
              return i === 0 ? (
                <th scope="row" key={c.label} data-label={label}>
                  {c.cell(item)}
                </th>
              ) : (
                <td key={c.label} class={c.num ? 'num' : undefined} data-label={label}>
                  {c.cell(item)}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  </TableScroll>
);

type PagedTableProps<T> = {
  label: string;
  /** The pager's name when it differs from the table's. */
  pagerLabel?: string;
  testId: string;
  columns: Column<T>[];
  page: Page<T>;
  onPage: (page: number) => void;
  rowKey: (item: T) => string | number;
  rowAttrs?: (item: T) => Record<string, string | undefined>;
};

/** One page of a list: its rows (ListTable) and the pager under it. */
export const PagedTable = <T,>(props: PagedTableProps<T>) => (
  <>
    <ListTable
      label={props.label}
      testId={props.testId}
      columns={props.columns}
      items={props.page.data}
      rowKey={props.rowKey}
      rowAttrs={props.rowAttrs}
    />
    <Pager meta={props.page.meta} onPage={props.onPage} label={props.pagerLabel ?? props.label} />
  </>
);

/** A wide panel holding one page of a list (empty when the list's total is 0), with what goes above the table. */
export const ListPanel = <T, P>(props: {
  id: string;
  title: string;
  result: Async<Page<T>, P>;
  retry: () => void;
  empty: string;
  actions?: ComponentChildren;
  /** Above the table, given the parameters the page was loaded for. */
  above?: (params: P) => ComponentChildren;
  table: Omit<PagedTableProps<T>, 'page'>;
}) => (
  <Panel
    id={props.id}
    title={props.title}
    wide
    result={props.result}
    retry={props.retry}
    isEmpty={(p) => p.meta.total === 0}
    empty={props.empty}
    actions={props.actions}
  >
    {(page, params) => (
      <>
        {props.above?.(params)}
        <PagedTable {...props.table} page={page} />
      </>
    )}
  </Panel>
);

/** A customer, a link to its page, named by name or email (`#id` only when it has neither). */
export const CustomerLink = (props: { id: number; name?: string | null; email?: string | null }) => (
  <a href={`#customers/${props.id}`}>{customerLabel({ customer_id: props.id, customer_name: props.name, customer_email: props.email })}</a>
);

/** A status as a coloured badge that also writes it (colour is never the only sign). */
export const Badge = ({ status, tone }: { status: string; tone?: 'good' | 'warn' | 'bad' | 'off' | 'info' }) => (
  <span class={`badge${tone ? ` ${tone}` : ''}`}>{status}</span>
);

/** A figure's value as the API gives it: a decimal string, a number, null, or amounts per currency (`unconverted`). */
export type Raw = string | number | null | Record<string, string>;

/**
 * A figure's value: as written, or, when it is written short (`NT$1.53M`), the short form on
 * screen with the exact one as its title (hover) and for screen readers (`data-exact` for tests).
 */
const FigureValue = ({ value, short }: { value: string; short?: string | null }) =>
  short ? (
    <dd class="value" title={value} data-exact={value}>
      <span aria-hidden="true">{short}</span>
      <span class="visually-hidden">{value}</span>
    </dd>
  ) : (
    <dd class="value">{value}</dd>
  );

export const rawText = (raw: Raw) => (raw === null ? '' : typeof raw === 'object' ? JSON.stringify(raw) : String(raw));

/**
 * A figure's definition behind an ⓘ button: a disclosure (`aria-expanded`, `aria-controls`) whose
 * popover holds the text, in the DOM but hidden while closed. Escape closes it (focus back on the
 * button), and so does a click anywhere else.
 */
const Info = ({ id, label, children }: { id: string; label: string; children: ComponentChildren }) => {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const pop = useRef<HTMLDivElement>(null);
  // Listening from the render that opens it (a layout effect), so an Escape right after the click is heard.
  useLayoutEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      button.current?.focus();
    };
    const onPointer = (e: PointerEvent) => {
      const target = e.target as Node;
      if (!button.current?.contains(target) && !pop.current?.contains(target)) setOpen(false);
    };
    document.addEventListener('keydown', onKey);
    document.addEventListener('pointerdown', onPointer);
    return () => {
      document.removeEventListener('keydown', onKey);
      document.removeEventListener('pointerdown', onPointer);
    };
  }, [open]);
  return (
    <>
      <button
        ref={button}
        type="button"
        class="info"
        aria-expanded={open}
        aria-controls={`${id}-info`}
        onClick={() => setOpen(!open)}
        data-testid={`${id}-info`}
      >
        <span aria-hidden="true">i</span>
        <span class="visually-hidden">What is {label}?</span>
      </button>
      <div ref={pop} id={`${id}-info`} class="info-pop" hidden={!open}>
        {children}
      </div>
    </>
  );
};

/**
 * A figure: its label (with its definition behind an ⓘ button when it has one, `info`), its value,
 * and whatever the card adds under it (`children`: a change, a trend line). Its exact API value is
 * kept in `data-value` (what the end-to-end test compares; an object as its JSON text).
 */
export const Figure = (props: {
  label: string;
  value: string;
  short?: string | null;
  raw: Raw;
  id: string;
  info?: ComponentChildren;
  /** Classes added to the card's (`kpi`). */
  class?: string;
  /** More attributes of the card (`data-previous`). */
  attrs?: Record<string, string>;
  children?: ComponentChildren;
}) => (
  <div class={`figure${props.class ? ` ${props.class}` : ''}`} data-figure={props.id} data-value={rawText(props.raw)} {...props.attrs}>
    <dt>
      <span class="label">{props.label}</span>
      {props.info && (
        <Info id={props.id} label={props.label}>
          {props.info}
        </Info>
      )}
    </dt>
    <FigureValue value={props.value} short={props.short} />
    {props.children}
  </div>
);

/**
 * How a figure is written: an amount in the currency, a count, a percentage, a ratio, the text as it
 * is, or amounts per currency (`USD 120.00`, `none` when empty).
 */
type FigureKind = 'money' | 'count' | 'percent' | 'ratio' | 'text' | 'amounts';
/** A figure of an answer: its field, what it is called and what it means (`info`; `id`: its name on the page, default the field). */
export type FigureSpec<D> = { key: keyof D & string; id?: string; label: string; kind: FigureKind; info: string; digits?: number };

const written = (kind: FigureKind, raw: Raw, currency: string, digits?: number): string => {
  if (raw === null) return kind === 'text' ? 'none' : '—';
  if (typeof raw === 'object') return amounts(raw);
  if (kind === 'money') return money(String(raw), currency);
  if (kind === 'count') return count(Number(raw));
  if (kind === 'percent') return percent(Number(raw), digits);
  if (kind === 'ratio') return ratio(Number(raw));
  return String(raw);
};

/** An answer's figures as a list, each written by its kind, its definition behind its ⓘ button. */
export const Figures = <D,>(props: {
  data: D;
  currency: string;
  specs: FigureSpec<D>[];
  compact?: boolean;
  /** Attributes of the list (what the figures were loaded for). */
  attrs?: Record<string, string>;
}) => (
  <dl class={`figures${props.compact ? ' compact' : ''}`} {...props.attrs}>
    {props.specs.map((f) => {
      const raw = props.data[f.key] as Raw;
      return (
        <Figure
          key={f.id ?? f.key}
          id={f.id ?? f.key}
          label={f.label}
          value={written(f.kind, raw, props.currency, f.digits)}
          short={f.kind === 'money' && typeof raw === 'string' ? compactMoney(raw, props.currency) : null}
          raw={raw}
          info={f.info}
        />
      );
    })}
  </dl>
);

/**
 * A secret the API shows once (an API token, a webhook signing secret), with a Copy button, until
 * the reader says they stored it. Nothing keeps it: a reload or another view forgets it.
 */
export const ShownOnce = (props: {
  title: string;
  note: string;
  label: string;
  value: string;
  testId: string;
  onDone: () => void;
  /** The heading's level where it stands (2 directly under the view's heading). */
  level?: 2 | 3;
}) => {
  const Heading = props.level === 2 ? 'h2' : 'h3';
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Copy failed: select the text and copy it by hand.');
    }
  };
  const id = `${props.testId}-title`;
  return (
    // biome-ignore lint/a11y/useSemanticElements: groups the secret with its heading; a fieldset would mark it as a form
    <div class="issued" role="group" aria-labelledby={id}>
      <Heading id={id}>{props.title}</Heading>
      <p>{props.note}</p>
      <div class="issued-row">
        <label class="visually-hidden" for={props.testId}>
          {props.label}
        </label>
        <input id={props.testId} readOnly value={props.value} onFocus={(e) => e.currentTarget.select()} data-testid={props.testId} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p role="status">{copied}</p>
      <button type="button" onClick={props.onDone}>
        I have stored it
      </button>
    </div>
  );
};

/**
 * Downloads a list as the API's CSV, every page of the current filters (at most CSV_MAX_PAGES), and
 * says in a live region what it saved.
 */
export const DownloadCsv = (props: {
  fileName: string;
  testId: string;
  /** One page of the list as CSV, from `cursor` (the first page without one). */
  page: (cursor: string | undefined) => Promise<CsvPage>;
}) => {
  const [state, setState] = useState<{ busy: boolean; notice: string }>({ busy: false, notice: '' });
  const run = async () => {
    setState({ busy: true, notice: '' });
    try {
      const { text, complete } = await allPagesCsv(props.page);
      saveFile(props.fileName, text);
      setState({
        busy: false,
        notice: complete
          ? `Saved ${props.fileName}.`
          : `Saved the first ${count(CSV_MAX_PAGES * CSV_PAGE_SIZE)} rows as ${props.fileName}; the API gives the rest.`,
      });
    } catch (err) {
      setState({ busy: false, notice: `Could not download: ${(err as Error).message}` });
    }
  };
  return (
    <div class="download">
      <button type="button" onClick={run} disabled={state.busy} data-testid={props.testId}>
        {state.busy ? 'Downloading…' : 'Download CSV'}
      </button>
      <p class="notice" role="status">
        {state.notice}
      </p>
    </div>
  );
};

/**
 * Cohorts as a heat map: a row per cohort (its month, its customers), then `width` cells, M0 (the
 * cohort's month) onwards, each a `<td>` from `cell` (keyed by its index), which colours it and
 * writes its value (colour is never the only sign).
 */
export const CohortTable = <C,>(props: {
  label: string;
  caption: string;
  testId: string;
  className?: string;
  cohorts: C[];
  name: (c: C) => string;
  customers: (c: C) => number;
  width: number;
  cell: (c: C, i: number) => ComponentChildren;
}) => (
  <TableScroll label={props.label}>
    <table class={`heatmap${props.className ? ` ${props.className}` : ''}`} data-testid={props.testId}>
      <caption class="visually-hidden">{props.caption}</caption>
      <Head cols={['Cohort', 'Customers', ...Array.from({ length: props.width }, (_, i) => `M${i}`)]} />
      <tbody>
        {props.cohorts.map((c) => (
          <tr key={props.name(c)} data-cohort={props.name(c)}>
            <th scope="row">{props.name(c)}</th>
            <td class="num">{count(props.customers(c))}</td>
            {Array.from({ length: props.width }, (_, i) => props.cell(c, i))}
          </tr>
        ))}
      </tbody>
    </table>
  </TableScroll>
);

/**
 * One customer-metadata pair (key and exact value), applied on submit (the API's
 * `metadata.<key>=<value>`); Clear when one is applied. `testId` prefixes its fields' test ids.
 */
export const MetadataFilter = (props: {
  value: MetadataPair | null;
  onChange: (m: MetadataPair | null) => void;
  label: string;
  testId: string;
}) => {
  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const [key, value] = [String(form.get('key') ?? ''), String(form.get('value') ?? '')];
    if (key && value) props.onChange({ key, value });
  };
  const { value } = props;
  return (
    // Keyed by the pair applied, so Clear (or the address) resets the fields.
    <form class="filters" onSubmit={apply} aria-label={props.label} key={value ? `${value.key}=${value.value}` : ''}>
      <label class="control">
        Metadata key
        <input name="key" type="text" defaultValue={value?.key} required autoComplete="off" data-testid={`${props.testId}-key`} />
      </label>
      <label class="control">
        Value (exact)
        <input name="value" type="text" defaultValue={value?.value} required autoComplete="off" data-testid={`${props.testId}-value`} />
      </label>
      <button type="submit">Apply</button>
      {value && (
        <button type="button" class="secondary" onClick={() => props.onChange(null)}>
          Clear
        </button>
      )}
    </form>
  );
};
