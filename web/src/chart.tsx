import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { MrrEntry } from './api';
import { money } from './format';

/**
 * MRR over time with its movements stacked: new, expansion and reactivation above the axis,
 * contraction and churn below, and the MRR level as a line on its own (right) axis. uPlot (canvas,
 * ~50 KB) draws the bars with its bars path builder: each layer is drawn as the running total of the
 * layers beneath it, tallest first, so the shorter ones paint over it — a stack without a plugin.
 * The canvas is one picture: screen readers get a summary label and the table below it. With
 * `onBar`, a click on a movement's bar calls it with the point and the movement (the table's figures
 * are the keyboard's way to the same thing).
 */
export const MOVEMENTS = [
  { key: 'new', label: 'New', color: '#1d6fb8', sign: 1 },
  { key: 'expansion', label: 'Expansion', color: '#3fa34d', sign: 1 },
  { key: 'reactivation', label: 'Reactivation', color: '#8e6cc9', sign: 1 },
  { key: 'contraction', label: 'Contraction', color: '#e08a1e', sign: -1 },
  { key: 'churn', label: 'Churn', color: '#c23b3b', sign: -1 },
] as const;
const MRR_COLOR = '#1b1f24';
export type MovementKey = (typeof MOVEMENTS)[number]['key'];

/** Running totals per side, outermost layer first (the drawing order). */
const stacks = (entries: MrrEntry[]) => {
  const layers: { key: MovementKey; label: string; color: string; values: number[] }[] = [];
  for (const sign of [1, -1]) {
    const side = MOVEMENTS.filter((m) => m.sign === sign);
    const totals = side.map((_, i) => entries.map((e) => side.slice(0, i + 1).reduce((sum, m) => sum + Number(e[m.key]), 0)));
    side.forEach((m, i) => layers.push({ key: m.key, label: m.label, color: m.color, values: totals[i] }));
  }
  // Within each side, the largest running total (the last layer) is drawn first.
  return [...layers.slice(0, 3).reverse(), ...layers.slice(3).reverse()];
};

type Box = { left: number; top: number; width: number; height: number };

/** An axis value written short (`1.5M`). */
const short = (v: number) => new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 }).format(v);

/** A uPlot chart in `el`, as wide as it is (280 px at least) and following its width; returns what removes it. */
const plotIn = (el: HTMLElement, height: number, opts: Omit<uPlot.Options, 'width' | 'height'>, data: uPlot.AlignedData) => {
  const width = () => Math.max(280, el.clientWidth);
  const plot = new uPlot({ ...opts, width: width(), height }, data, el);
  const resize = new ResizeObserver(() => plot.setSize({ width: width(), height }));
  resize.observe(el);
  return {
    plot,
    remove: () => {
      resize.disconnect();
      plot.destroy();
    },
  };
};

export const MrrChart = (props: {
  entries: MrrEntry[];
  currency: string;
  interval: string;
  /** Called on a click on a movement's bar, with the point's index; none: the bars are not clickable. */
  onBar?: (index: number, movement: MovementKey) => void;
}) => {
  const { entries, currency, interval, onBar } = props;
  const box = useRef<HTMLDivElement>(null);
  // The chart is built once per data; the handler it calls is the latest one.
  const onBarRef = useRef(onBar);
  onBarRef.current = onBar;
  useEffect(() => {
    const el = box.current!;
    const labels = entries.map((e) => (interval === 'month' ? e.date.slice(0, 7) : e.date));
    const layers = stacks(entries);
    // Each bar as drawn (canvas pixels), by series then point: what a click is tested against.
    const drawn: Box[][] = layers.map(() => []);
    const bars = uPlot.paths.bars!({
      size: [0.7, 48],
      each: (_u, s, i, left, top, width, height) => {
        drawn[s - 1][i] = { left, top, width, height };
      },
    });
    /**
     * The movement whose bar is under a point of the plot area (CSS pixels, as uPlot's cursor):
     * the point nearest it, then its layers from the last drawn, which paints over the others.
     */
    const movementAt = (u: uPlot, left: number, top: number): { index: number; movement: MovementKey } | null => {
      if (left < 0 || top < 0) return null;
      const index = u.posToIdx(left);
      const [x, y] = [left * uPlot.pxRatio + u.bbox.left, top * uPlot.pxRatio + u.bbox.top];
      for (let s = layers.length - 1; s >= 0; s--) {
        const b = drawn[s][index];
        if (b && x >= b.left && x < b.left + b.width && y >= b.top && y < b.top + b.height) return { index, movement: layers[s].key };
      }
      return null;
    };
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      hooks: {
        // A pointer over a bar that opens something.
        setCursor: [(u) => (u.over.style.cursor = onBarRef.current && movementAt(u, u.cursor.left!, u.cursor.top!) ? 'pointer' : '')],
        // The scales' ranges on the plot area: where a point of the chart is, for a test or a tool.
        draw: [
          (u) => {
            for (const key of ['x', 'moves'])
              Object.assign(u.over.dataset, { [`${key}Min`]: String(u.scales[key].min), [`${key}Max`]: String(u.scales[key].max) });
          },
        ],
      },
      scales: {
        x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
        moves: { range: (_u, min, max) => [Math.min(0, min) * 1.1, Math.max(0, max) * 1.1 || 1] },
        mrr: { range: (_u, _min, max) => [0, max * 1.1 || 1] },
      },
      axes: [
        { values: (_u, splits) => splits.map((i) => labels[i] ?? ''), space: 60, gap: 4 },
        { scale: 'moves', values: (_u, splits) => splits.map(short), size: 56 },
        { scale: 'mrr', side: 1, values: (_u, splits) => splits.map(short), grid: { show: false }, size: 56 },
      ],
      series: [
        {},
        ...layers.map((l) => ({
          label: l.label,
          scale: 'moves',
          fill: l.color,
          stroke: l.color,
          width: 0,
          paths: bars,
          fillTo: 0,
          points: { show: false },
        })),
        { label: 'MRR', scale: 'mrr', stroke: MRR_COLOR, width: 2, points: { show: true, size: 5, fill: MRR_COLOR } },
      ],
    };
    const data: uPlot.AlignedData = [entries.map((_, i) => i), ...layers.map((l) => l.values), entries.map((e) => Number(e.mrr))];
    const { plot, remove } = plotIn(el, 280, opts, data);
    plot.over.addEventListener('click', (e) => {
      const at = plot.over.getBoundingClientRect();
      const hit = movementAt(plot, e.clientX - at.left, e.clientY - at.top);
      if (hit) onBarRef.current?.(hit.index, hit.movement);
    });
    return remove;
  }, [entries, interval]);

  const first = entries[0];
  const last = entries[entries.length - 1];
  const summary = first
    ? `Chart: MRR from ${money(first.mrr, currency)} (${first.date}) to ${money(last.mrr, currency)} (${last.date}) over ${entries.length} ${interval}s, with the movements of each ${interval}. The same figures are in the table below.`
    : 'Chart: no data';
  return (
    <figure class="chart">
      <div class="legend" aria-hidden="true">
        {MOVEMENTS.map((m) => (
          <span key={m.key}>
            <i style={{ background: m.color }} /> {m.label}
          </span>
        ))}
        <span>
          <i class="line" style={{ background: MRR_COLOR }} /> MRR (right axis)
        </span>
      </div>
      <div ref={box} class="chart-canvas" role="img" aria-label={summary} data-testid="mrr-chart" />
      {onBar && (
        <p class="hint" data-testid="chart-hint">
          Click a bar to list its customers, or pick a figure in the table below.
        </p>
      )}
      <figcaption class="visually-hidden">{summary}</figcaption>
    </figure>
  );
};

/**
 * A small trend line (SVG, no axes) of a figure's last values, oldest first; nulls are gaps left
 * out. Decorative beside its figure: the figure's change names the same trend in words.
 */
export const Sparkline = ({ values }: { values: (number | null)[] }) => {
  const points = values.map((v, i) => [i, v] as const).filter((p): p is readonly [number, number] => p[1] !== null);
  if (points.length < 2) return null;
  const ys = points.map(([, v]) => v);
  const [min, max] = [Math.min(...ys), Math.max(...ys)];
  const [w, h] = [120, 28];
  const x = (i: number) => (i / Math.max(1, values.length - 1)) * w;
  const y = (v: number) => (max === min ? h / 2 : h - 2 - ((v - min) / (max - min)) * (h - 4));
  return (
    <svg class="spark" viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" aria-hidden="true" focusable="false">
      <polyline points={points.map(([i, v]) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')} />
    </svg>
  );
};

/** One line of a LineChart: its name, colour and values (one per label). */
export type Line = { label: string; color: string; values: number[]; dash?: number[] };

/**
 * Lines over periods (uPlot, as the MRR chart), with a legend that names each line. The canvas is
 * one picture: `summary` is its text, and the same figures are in a table next to it.
 */
export const LineChart = (props: { labels: string[]; lines: Line[]; summary: string; testId: string; currency?: string }) => {
  const { labels, lines } = props;
  const box = useRef<HTMLDivElement>(null);
  const key = JSON.stringify([labels, lines]);
  useEffect(
    () =>
      plotIn(
        box.current!,
        240,
        {
          legend: { show: false },
          cursor: { drag: { x: false, y: false } },
          scales: {
            x: { time: false, range: (_u, min, max) => [min - 0.25, max + 0.25] },
            y: { range: (_u, min, max) => [Math.min(0, min), max * 1.1 || 1] },
          },
          axes: [
            { values: (_u, splits) => splits.map((i) => labels[i] ?? ''), space: 60, gap: 4 },
            { values: (_u, splits) => splits.map(short), size: 56 },
          ],
          series: [
            {},
            ...lines.map((l) => ({
              label: l.label,
              stroke: l.color,
              width: 2,
              dash: l.dash,
              points: { show: true, size: 5, fill: l.color },
            })),
          ],
        },
        [labels.map((_, i) => i), ...lines.map((l) => l.values)],
      ).remove,
    [key],
  );
  return (
    <figure class="chart">
      <div class="legend" aria-hidden="true">
        {lines.map((l) => (
          <span key={l.label}>
            <i class="line" style={{ background: l.color }} /> {l.label}
          </span>
        ))}
      </div>
      <div ref={box} class="chart-canvas short" role="img" aria-label={props.summary} data-testid={props.testId} />
      <figcaption class="visually-hidden">{props.summary}</figcaption>
    </figure>
  );
};

/** A heat map's colour: it follows a percentage (0–100), which is also written in each cell (colour is never the only sign). */
export const heat = (pct: number | null) => (pct === null ? 'transparent' : `hsl(205 70% ${96 - Math.max(0, Math.min(100, pct)) * 0.36}%)`);
