import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Meta, Page } from './api';

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

/** One page of a list: its rows in a scrollable table, and the pager under it. */
export const PagedTable = <T,>(props: {
  label: string;
  /** The pager's name when it differs from the table's. */
  pagerLabel?: string;
  testId: string;
  cols: ComponentChildren[];
  page: Page<T>;
  onPage: (page: number) => void;
  row: (item: T) => ComponentChildren;
}) => (
  <>
    <TableScroll label={props.label}>
      <table data-testid={props.testId}>
        <Head cols={props.cols} />
        <tbody>{props.page.data.map(props.row)}</tbody>
      </table>
    </TableScroll>
    <Pager meta={props.page.meta} onPage={props.onPage} label={props.pagerLabel ?? props.label} />
  </>
);

/** A figure with its exact API value kept in `data-value` (what the end-to-end test compares). */
export const Figure = ({ label, value, raw, id }: { label: string; value: string; raw: string | number | null; id: string }) => (
  <div class="figure" data-figure={id} data-value={raw === null ? '' : String(raw)}>
    <dt>{label}</dt>
    <dd>{value}</dd>
  </div>
);
