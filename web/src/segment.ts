/**
 * What the overview's recurring-revenue figures cover (docs/metrics.md, "Segments"): a stored
 * segment — '' (all), `plan:<name>`, `billing_cycle:<cycle>` or `currency:<ISO>` — and at most one
 * customer-metadata pair, ANDed with it. The stored segments read their own aggregates (flat cost);
 * a metadata pair reads the matching customers' histories, at a cost that grows with them. The API
 * also takes several plans and several metadata pairs; the picker offers one of each.
 */
export const CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly'] as const;
type Cycle = (typeof CYCLES)[number];
export type Segment = string;
export type MetadataPair = { key: string; value: string };
export type Filter = { segment: Segment; metadata: MetadataPair | null };
export const ALL: Filter = { segment: '', metadata: null };

type SegmentQuery = { plan?: string; billing_cycle?: Cycle; currency?: string };
export const segmentQuery = (segment: Segment): SegmentQuery => {
  const at = segment.indexOf(':');
  if (at < 0) return {};
  const [kind, value] = [segment.slice(0, at), segment.slice(at + 1)];
  if (kind === 'plan') return { plan: value };
  if (kind === 'billing_cycle' && (CYCLES as readonly string[]).includes(value)) return { billing_cycle: value as Cycle };
  if (kind === 'currency' && /^[A-Z]{3}$/.test(value)) return { currency: value };
  return {};
};

/** The API's parameter prefix of a metadata filter, also used in the dashboard's address. */
const METADATA_PREFIX = 'metadata.';

/**
 * The metrics query of a filter: the segment's parameter and `metadata.<key>=<value>`. The key is
 * escaped here: the client escapes values but writes parameter names as given.
 */
export const filterQuery = (f: Filter): SegmentQuery =>
  f.metadata
    ? ({ ...segmentQuery(f.segment), [`${METADATA_PREFIX}${encodeURIComponent(f.metadata.key)}`]: f.metadata.value } as SegmentQuery)
    : segmentQuery(f.segment);

/** What a filter covers, in words (ends a figure's explanation). */
export const filterWords = (f: Filter, reportingCurrency: string) => {
  const q = segmentQuery(f.segment);
  const words =
    q.plan !== undefined
      ? `plan “${q.plan}” only`
      : q.billing_cycle
        ? `${q.billing_cycle} billing only`
        : q.currency
          ? `subscriptions and orders in ${q.currency} only, in ${q.currency} (not converted)`
          : `all revenue, in ${reportingCurrency}`;
  return f.metadata ? `${words}, of the customers whose metadata ${f.metadata.key} is “${f.metadata.value}”` : words;
};

/** The currency a filter's amounts are in: its own for a currency segment, else the reporting currency. */
export const filterCurrency = (f: Filter, reportingCurrency: string) => segmentQuery(f.segment).currency ?? reportingCurrency;

/** The metadata pair as the page labels what it loaded (`key=value`, '' for none). */
export const metadataLabel = (f: Filter) => (f.metadata ? `${f.metadata.key}=${f.metadata.value}` : '');

/**
 * The filter kept in the address, as `?segment=plan:<name>` and `?metadata.<key>=<value>` (the
 * API's own spelling), so a reload or a shared link shows the same figures. An unreadable segment is
 * all; of several metadata pairs the first is kept.
 */
const SEGMENT_PARAM = 'segment';
export const filterFromSearch = (search: string): Filter => {
  const params = new URLSearchParams(search);
  const s = params.get(SEGMENT_PARAM) ?? '';
  const pair = [...params].find(([k, v]) => k.startsWith(METADATA_PREFIX) && k.length > METADATA_PREFIX.length && v !== '');
  return {
    segment: Object.keys(segmentQuery(s)).length ? s : '',
    metadata: pair ? { key: pair[0].slice(METADATA_PREFIX.length), value: pair[1] } : null,
  };
};
/** The address with the filter in it (other parameters kept). */
export const withFilter = (href: string, f: Filter): string => {
  const url = new URL(href);
  if (f.segment) url.searchParams.set(SEGMENT_PARAM, f.segment);
  else url.searchParams.delete(SEGMENT_PARAM);
  for (const k of [...url.searchParams.keys()]) if (k.startsWith(METADATA_PREFIX)) url.searchParams.delete(k);
  if (f.metadata) url.searchParams.set(`${METADATA_PREFIX}${f.metadata.key}`, f.metadata.value);
  return url.href;
};
