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
 * The canvas is one picture: screen readers get a summary label and the table below it.
 */
export const MOVEMENTS = [
  { key: 'new', label: 'New', color: '#1d6fb8', sign: 1 },
  { key: 'expansion', label: 'Expansion', color: '#3fa34d', sign: 1 },
  { key: 'reactivation', label: 'Reactivation', color: '#8e6cc9', sign: 1 },
  { key: 'contraction', label: 'Contraction', color: '#e08a1e', sign: -1 },
  { key: 'churn', label: 'Churn', color: '#c23b3b', sign: -1 },
] as const;
const MRR_COLOR = '#1b1f24';

/** Running totals per side, outermost layer first (the drawing order). */
const stacks = (entries: MrrEntry[]) => {
  const layers: { label: string; color: string; values: number[] }[] = [];
  for (const sign of [1, -1]) {
    const side = MOVEMENTS.filter((m) => m.sign === sign);
    const totals = side.map((_, i) => entries.map((e) => side.slice(0, i + 1).reduce((sum, m) => sum + Number(e[m.key]), 0)));
    side.forEach((m, i) => layers.push({ label: m.label, color: m.color, values: totals[i] }));
  }
  // Within each side, the largest running total (the last layer) is drawn first.
  return [...layers.slice(0, 3).reverse(), ...layers.slice(3).reverse()];
};

export const MrrChart = ({ entries, currency, interval }: { entries: MrrEntry[]; currency: string; interval: string }) => {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const labels = entries.map((e) => (interval === 'month' ? e.date.slice(0, 7) : e.date));
    const layers = stacks(entries);
    const bars = uPlot.paths.bars!({ size: [0.7, 48] });
    const short = (v: number) => new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 }).format(v);
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 280,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
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
    const plot = new uPlot(opts, data, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 280 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
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
      <figcaption class="visually-hidden">{summary}</figcaption>
    </figure>
  );
};
