import { type Api, type Me, ok } from '../api';
import { Sparkline } from '../chart';
import { monthBefore, rangeStart, todayIn } from '../dates';
import { amounts, change, compactCount, compactMoney, count, money, percent } from '../format';
import { Figure, Panel, rawText, useAsync } from '../ui';

/**
 * The overview's first row: four headline figures of this month (MRR, net revenue, new buyers, MRR
 * churn rate), each with its change against last month and a trend line over the last 12 months.
 * Their definitions sit behind an ⓘ button on each, as every figure's do (Figure). Large amounts are written short (`NT$1.53M`)
 * with the exact value on hover and for screen readers.
 */
type Kind = 'money' | 'count' | 'percent';
type Headline = {
  id: string;
  label: string;
  kind: Kind;
  /** This month's value and last month's, as the API gives them. */
  raw: string | number | null;
  previous: string | number | null;
  /** One value a month, oldest first (this month last). */
  trend: (number | null)[];
  /** Whether a rise is good news (churn: no). */
  upIsGood: boolean;
  info: string;
};

const written = (kind: Kind, raw: string | number | null, currency: string) =>
  raw === null ? '—' : kind === 'money' ? money(String(raw), currency) : kind === 'count' ? count(Number(raw)) : percent(Number(raw), 2);

const shortOf = (kind: Kind, raw: string | number | null, currency: string) =>
  raw === null ? null : kind === 'money' ? compactMoney(String(raw), currency) : kind === 'count' ? compactCount(Number(raw)) : null;

const ARROWS = { up: '▲', down: '▼', flat: '■', none: '·' };

const HeadlineFigure = ({ h, currency }: { h: Headline; currency: string }) => {
  const c = change(h);
  const tone = c.direction === 'up' || c.direction === 'down' ? ((c.direction === 'up') === h.upIsGood ? 'good' : 'bad') : '';
  return (
    <Figure
      id={h.id}
      class="kpi"
      label={h.label}
      value={written(h.kind, h.raw, currency)}
      short={shortOf(h.kind, h.raw, currency)}
      raw={h.raw}
      attrs={{ 'data-previous': rawText(h.previous) }}
      info={h.info}
    >
      <dd class={`change ${tone}`} data-testid={`${h.id}-change`}>
        <span aria-hidden="true">{ARROWS[c.direction]} </span>
        {c.text}
      </dd>
      <dd class="trend">
        <Sparkline values={h.trend} />
      </dd>
    </Figure>
  );
};

export const Headline = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync({ zone: me.timezone }, async () => {
    const today = todayIn(me.timezone);
    const range = { interval: 'month' as const, start_date: rangeStart('12m', today), end_date: today };
    const [mrr, sales] = await Promise.all([
      ok(api.GET('/metrics/mrr', { params: { query: range } })),
      ok(api.GET('/metrics/sales', { params: { query: range } })),
    ]);
    return { mrr, sales, today };
  });
  return (
    <Panel id="headline" title="This month at a glance" wide result={result} retry={retry}>
      {({ mrr, sales, today }, { zone }) => {
        const ccy = me.reporting_currency;
        const [m, mPrev] = [mrr.data.at(-1) ?? null, mrr.data.at(-2) ?? null];
        const [s, sPrev] = [sales.data.at(-1) ?? null, sales.data.at(-2) ?? null];
        const month = `this month (${monthBefore(today, 0)}, ${zone}) so far`;
        const churned = m ? money(m.churn.replace('-', ''), ccy) : '—';
        const figures: Headline[] = [
          {
            id: 'headline_mrr',
            label: 'MRR',
            kind: 'money',
            raw: m?.mrr ?? null,
            previous: mPrev?.mrr ?? null,
            trend: mrr.data.map((e) => Number(e.mrr)),
            upIsGood: true,
            info: `Monthly recurring revenue now (subscriptions and running recurring orders), in ${ccy}; compared with the MRR at the end of last month.`,
          },
          {
            id: 'headline_net_revenue',
            label: 'Net revenue',
            kind: 'money',
            raw: s?.net_revenue ?? null,
            previous: sPrev?.net_revenue ?? null,
            trend: sales.data.map((e) => Number(e.net_revenue)),
            upIsGood: true,
            info: `Money of the orders paid ${month}, less the refunds of the month, in ${ccy} (other currencies at their month's rate); compared with the whole of last month.`,
          },
          {
            id: 'headline_new_buyers',
            label: 'New buyers',
            kind: 'count',
            raw: s?.new_buyers ?? null,
            previous: sPrev?.new_buyers ?? null,
            trend: sales.data.map((e) => e.new_buyers),
            upIsGood: true,
            info: `Customers whose first paid order was paid ${month}; compared with the whole of last month.`,
          },
          {
            id: 'headline_mrr_churn',
            label: 'MRR churn rate',
            kind: 'percent',
            raw: m?.mrr_churn_rate ?? null,
            previous: mPrev?.mrr_churn_rate ?? null,
            trend: mrr.data.map((e) => e.mrr_churn_rate),
            upIsGood: false,
            info: `MRR lost to churn and contraction ${month} ÷ MRR at the end of last month (gross). Churned MRR this month: ${churned}.`,
          },
        ];
        const leftOut = Object.entries(sales.unconverted);
        return (
          <>
            <dl class="headline">
              {figures.map((h) => (
                <HeadlineFigure key={h.id} h={h} currency={ccy} />
              ))}
            </dl>
            <p class="hint">Changes compare with last month; trend lines show the last 12 months.</p>
            {(leftOut.length > 0 || (m && Object.keys(m.unconverted).length > 0)) && (
              <p class="hint" data-testid="headline-unconverted" data-unconverted={JSON.stringify(sales.unconverted)}>
                Left out for want of an exchange rate:{' '}
                {[
                  ...leftOut.map(([ccy, v]) => `${amounts({ [ccy]: v.gross_revenue })} of sales`),
                  ...(m && Object.keys(m.unconverted).length ? [`${amounts(m.unconverted)} of MRR`] : []),
                ].join(', ')}
                . Set rates in Settings.
              </p>
            )}
          </>
        );
      }}
    </Panel>
  );
};
