import { describe, expect, it } from 'vitest';
import { filterFromSearch, filterQuery, filterWords, withFilter } from '../../web/src/segment.ts';

/** The overview's segment and metadata filter: its query, its words, and the address (web/src/segment.ts). */
describe('the overview filter', () => {
  const gold = { key: 'plan_tier', value: 'gold' };

  it('is the segment’s parameter and one metadata.<key>=<value>, the key escaped for the query', () => {
    expect(filterQuery({ segment: '', metadata: null })).toEqual({});
    expect(filterQuery({ segment: 'plan:Pro', metadata: gold })).toEqual({ plan: 'Pro', 'metadata.plan_tier': 'gold' });
    expect(filterQuery({ segment: 'billing_cycle:weekly', metadata: { key: 'a&b=c', value: 'x y' } })).toEqual({
      'metadata.a%26b%3Dc': 'x y',
    });
  });

  it('says what it covers in words', () => {
    expect(filterWords({ segment: '', metadata: gold }, 'TWD')).toBe(
      'all revenue, in TWD, of the customers whose metadata plan_tier is “gold”',
    );
    expect(filterWords({ segment: 'plan:Pro', metadata: null }, 'TWD')).toBe('plan “Pro” only');
    expect(filterWords({ segment: 'currency:USD', metadata: gold }, 'TWD')).toBe(
      'subscriptions and orders in USD only, in USD (not converted), of the customers whose metadata plan_tier is “gold”',
    );
  });

  it('is kept in the address as ?segment= and ?metadata.<key>=, read back the same; other parameters stay', () => {
    const filter = { segment: 'plan:Pro Plus', metadata: { key: 'region', value: 'eu & us' } };
    const href = withFilter('https://dash.example/?x=1#overview', filter);
    const url = new URL(href);
    expect(url.hash).toBe('#overview');
    expect(url.searchParams.get('x')).toBe('1');
    expect(filterFromSearch(url.search)).toEqual(filter);
    // Applying another pair replaces the first; clearing both leaves only the rest.
    const other = withFilter(href, { segment: '', metadata: gold });
    expect([...new URL(other).searchParams.keys()]).toEqual(['x', 'metadata.plan_tier']);
    expect(withFilter(other, { segment: '', metadata: null })).toBe('https://dash.example/?x=1#overview');
  });

  it('falls back to all on an unreadable segment, and keeps the first metadata pair that names a key and a value', () => {
    expect(filterFromSearch('?segment=bogus')).toEqual({ segment: '', metadata: null });
    expect(filterFromSearch('?metadata.=x&metadata.a=&metadata.b=2&metadata.c=3')).toEqual({
      segment: '',
      metadata: { key: 'b', value: '2' },
    });
  });
});
