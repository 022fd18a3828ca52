import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Forecast, MrrEntry } from './api';
import { money } from './format';

/**
 * MRR over time with its movements stacked: new, expansion and reactivation above the axis,
 * contraction and churn below — churn in two layers, voluntary and delinquent (failed renewals,
 * hatched) — and the MRR level as a line on its own (right) axis. With `committed` (GET
 * /metrics/forecast), the committed MRR follows today as a dashed line of its own, at each month
 * end, after a marked line for today: scheduled changes, never mixed with the actuals. uPlot
 * (canvas, ~50 KB) draws the bars with its bars path builder: each layer is drawn as the running
 * total of the layers beneath it, tallest first, so the shorter ones paint over it — a stack
 * without a plugin. The canvas is one picture: screen readers get a summary label and the tables
 * below it. With `onBar`, a click on a movement's bar calls it with the point and the movement
 * (the table's figures are the keyboard's way to the same thing).
 */
export const MOVEMENTS = [
  { key: 'new', label: 'New', color: '#1d6fb8', sign: 1 },
  { key: 'expansion', label: 'Expansion', color: '#3fa34d', sign: 1 },
  { key: 'reactivation', label: 'Reactivation', color: '#8e6cc9', sign: 1 },
  { key: 'contraction', label: 'Contraction', color: '#e08a1e', sign: -1 },
  { key: 'churn', label: 'Churn', color: '#c23b3b', sign: -1 },
] as const;
export type MovementKey = (typeof MOVEMENTS)[number]['key'];
/** The chart's layers, from the axis out on each side: the movements, churn split in two. `figure`: the table's figure its bar opens. */
export const LAYERS: { key: keyof MrrEntry & string; label: string; color: string; sign: 1 | -1; figure: MovementKey; hatch?: boolean }[] =
  [
    ...MOVEMENTS.filter((m) => m.key !== 'churn').map((m) => ({ ...m, figure: m.key })),
    { key: 'voluntary_churn', label: 'Voluntary churn', color: '#c23b3b', sign: -1, figure: 'churn' },
    // Hatched, in the chart and its legend: told apart from voluntary churn without its colour.
    { key: 'delinquent_churn', label: 'Delinquent churn (failed payments)', color: '#6e1a1a', sign: -1, figure: 'churn', hatch: true },
  ];
const MRR_COLOR = '#1b1f24';
export const COMMITTED_COLOR = '#0b7a75';

/** Running totals per side, outermost layer first (the drawing order); `extra` points (the forecast's) have none. */
const stacks = (entries: MrrEntry[], extra: number) => {
  const layers: ((typeof LAYERS)[number] & { values: (number | null)[] })[] = [];
  for (const sign of [1, -1]) {
    const side = LAYERS.filter((m) => m.sign === sign);
    const totals = side.map((_, i) => [
      ...entries.map((e) => side.slice(0, i + 1).reduce((sum, m) => sum + Number(e[m.key]), 0)),
      ...Array<null>(extra).fill(null),
    ]);
    // Within each side, the largest running total (the last layer) is drawn first.
    layers.push(...side.map((m, i) => ({ ...m, values: totals[i] })).reverse());
  }
  return layers;
};

/** A canvas fill of diagonal white stripes over `color` (the delinquent churn's bars). */
const hatchOf = (color: string): CanvasPattern | string => {
  const k = Math.max(6, Math.round(6 * uPlot.pxRatio));
  const tile = document.createElement('canvas');
  tile.width = tile.height = k;
  const g = tile.getContext('2d');
  if (!g) return color;
  g.fillStyle = color;
  g.fillRect(0, 0, k, k);
  g.strokeStyle = 'rgb(255 255 255 / 80%)';
  g.lineWidth = k / 4;
  g.beginPath();
  for (const o of [-k, 0, k]) {
    g.moveTo(o, k);
    g.lineTo(o + k, 0);
  }
  g.stroke();
  return g.createPattern(tile, 'repeat') ?? color;
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
  /** The committed MRR (GET /metrics/forecast), drawn after today; none: not shown (under a filter). */
  committed?: Forecast;
}) => {
  const { entries, currency, interval, onBar, committed } = props;
  const box = useRef<HTMLDivElement>(null);
  // The chart is built once per data; the handler it calls is the latest one.
  const onBarRef = useRef(onBar);
  onBarRef.current = onBar;
  useEffect(() => {
    const el = box.current!;
    const future = committed && entries.length > 0 ? committed.data : [];
    const n = entries.length;
    // The actual points by their first day (a month as YYYY-MM), then the committed ones by their month end.
    const labels = [...entries.map((e) => (interval === 'month' ? e.date.slice(0, 7) : e.date)), ...future.map((f) => f.date)];
    const layers = stacks(entries, future.length);
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
        if (b && x >= b.left && x < b.left + b.width && y >= b.top && y < b.top + b.height) return { index, movement: layers[s].figure };
      }
      return null;
    };
    /** Today: a dotted line between the last actual point and the first committed one, and what follows it. */
    const markToday = (u: uPlot) => {
      if (future.length === 0) return;
      const ctx = u.ctx;
      const x = Math.round(u.valToPos(n - 0.5, 'x', true));
      const px = uPlot.pxRatio;
      ctx.save();
      ctx.strokeStyle = '#59636e';
      ctx.lineWidth = px;
      ctx.setLineDash([3 * px, 3 * px]);
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.fillStyle = '#3d4652';
      ctx.font = `${11 * px}px system-ui, sans-serif`;
      // Right of the line where the words fit in the plot, else left of it.
      const words = 'today';
      const room = u.bbox.left + u.bbox.width - x - 4 * px;
      ctx.textAlign = ctx.measureText(words).width <= room ? 'left' : 'right';
      ctx.fillText(words, ctx.textAlign === 'left' ? x + 4 * px : x - 4 * px, u.bbox.top + 12 * px);
      ctx.restore();
    };
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      hooks: {
        // A pointer over a bar that opens something.
        setCursor: [(u) => (u.over.style.cursor = onBarRef.current && movementAt(u, u.cursor.left!, u.cursor.top!) ? 'pointer' : '')],
        // The scales' ranges on the plot area: where a point of the chart is, for a test or a tool.
        // Today's line under the series (the committed line's first point paints over its words).
        drawClear: [markToday],
        draw: [
          (u) => {
            for (const key of ['x', 'moves', 'mrr'])
              Object.assign(u.over.dataset, { [`${key}Min`]: String(u.scales[key].min), [`${key}Max`]: String(u.scales[key].max) });
            Object.assign(u.over.dataset, { actualPoints: String(n), committedPoints: String(future.length) });
          },
        ],
      },
      scales: {
        x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
        moves: { range: (_u, min, max) => [Math.min(0, min) * 1.1, Math.max(0, max) * 1.1 || 1] },
        mrr: { range: (_u, _min, max) => [0, max * 1.1 || 1] },
      },
      axes: [
        // Room for the longest label (a month end's date is longer than a month), so none overlaps the next.
        {
          values: (_u, splits) => splits.map((i) => labels[i] ?? ''),
          space: Math.max(60, 8 * Math.max(...labels.map((l) => l.length))),
          gap: 4,
        },
        { scale: 'moves', values: (_u, splits) => splits.map(short), size: 56 },
        { scale: 'mrr', side: 1, values: (_u, splits) => splits.map(short), grid: { show: false }, size: 56 },
      ],
      series: [
        {},
        ...layers.map((l) => {
          const fill = l.hatch ? hatchOf(l.color) : l.color;
          return { label: l.label, scale: 'moves', fill, stroke: l.color, width: 0, paths: bars, fillTo: 0, points: { show: false } };
        }),
        { label: 'MRR', scale: 'mrr', stroke: MRR_COLOR, width: 2, points: { show: true, size: 5, fill: MRR_COLOR } },
        ...(future.length
          ? [
              {
                label: 'Committed MRR',
                scale: 'mrr',
                stroke: COMMITTED_COLOR,
                width: 2,
                dash: [6, 4],
                points: { show: true, size: 6, fill: COMMITTED_COLOR },
              },
            ]
          : []),
      ],
    };
    const data: uPlot.AlignedData = [
      labels.map((_, i) => i),
      ...layers.map((l) => l.values),
      [...entries.map((e) => Number(e.mrr)), ...future.map(() => null)],
      // From today's MRR (where the forecast starts) through each month end; nothing before today.
      ...(future.length
        ? [
            [
              ...entries.map((_, i) => (i === n - 1 ? Number(committed!.summary.current_mrr) : null)),
              ...future.map((f) => Number(f.committed_mrr)),
            ],
          ]
        : []),
    ];
    const { plot, remove } = plotIn(el, 280, opts, data);
    plot.over.addEventListener('click', (e) => {
      const at = plot.over.getBoundingClientRect();
      const hit = movementAt(plot, e.clientX - at.left, e.clientY - at.top);
      if (hit) onBarRef.current?.(hit.index, hit.movement);
    });
    return remove;
  }, [entries, interval, committed]);

  const first = entries[0];
  const last = entries[entries.length - 1];
  const ahead = committed?.data.at(-1);
  const summary = first
    ? `Chart: MRR from ${money(first.mrr, currency)} (${first.date}) to ${money(last.mrr, currency)} (${last.date}) over ${entries.length} ${interval}s, with the movements of each ${interval}, churn split into voluntary and delinquent.${ahead ? ` After today, a dashed line: the committed MRR, today's MRR moved by the changes already scheduled, ${money(ahead.committed_mrr, currency)} at the end of ${ahead.date}.` : ''} The same figures are in the tables below.`
    : 'Chart: no data';
  return (
    <figure class="chart">
      <div class="legend" aria-hidden="true">
        {LAYERS.map((m) => (
          <span key={m.key}>
            <i class={m.hatch ? 'hatch' : undefined} style={{ backgroundColor: m.color }} /> {m.label}
          </span>
        ))}
        <span>
          <i class="line" style={{ background: MRR_COLOR }} /> MRR (right axis)
        </span>
        {committed && (
          <span data-testid="committed-legend">
            <i class="line dashed" style={{ color: COMMITTED_COLOR }} /> Committed MRR, scheduled (after today)
          </span>
        )}
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
