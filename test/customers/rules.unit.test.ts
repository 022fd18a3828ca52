import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.ts';
import type { CustomerItem } from '#lib/customers/model';
import {
  EXTERNAL_ID_TAKEN,
  isIdSegment,
  planImport,
  profileChanges,
  searchPage,
  searchTerm,
  type ImportItem,
  type ImportReads,
} from '#lib/customers/rules';

/** The customers' rules (docs/customers.md), decided in memory: no database, no HTTP. */
const customer = (over: Partial<CustomerItem> = {}): CustomerItem => ({
  pk: 'p',
  sk: 's',
  id: 5,
  email: 'a@example.com',
  name: 'Ann',
  phone: null,
  external_id: null,
  metadata: null,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  ...over,
});

describe('addressing and updates', () => {
  it('an all-digit segment (up to 15) is an id, anything else an external_id', () => {
    expect(isIdSegment('42')).toBe(true);
    expect(isIdSegment('1234567890123456')).toBe(false);
    expect(isIdSegment('ext-42')).toBe(false);
  });

  it('an update changes only the given fields that differ; emails compare in lower case; null clears', () => {
    expect(profileChanges(customer(), { email: 'A@Example.com', name: 'Ann' })).toEqual({});
    expect(profileChanges(customer(), { name: null, phone: '123', email: 'B@example.com' })).toEqual({
      name: null,
      phone: '123',
      email: 'b@example.com',
    });
  });
});

describe('planImport', () => {
  const item = (index: number, input: Partial<ImportItem['input']>): ImportItem => ({
    index,
    identifier: input.email ?? '',
    input: { email: 'a@example.com', ...input } as ImportItem['input'],
  });
  const none: ImportReads = { emailOwner: () => undefined, externalIdOwner: () => undefined, customer: () => undefined };
  const run = (items: ImportItem[], onConflict: 'skip' | 'update', reads: ImportReads = none) => {
    const out = { skipped: [] as number[], failed: [] as [number, string][] };
    const plans = planImport(items, onConflict, reads, {
      skipped: (v) => out.skipped.push(v.index),
      failed: (v, m) => out.failed.push([v.index, m]),
    });
    return { plans, ...out };
  };

  it('folds the items naming one email into one create, later fields over earlier ones', () => {
    const { plans } = run(
      [item(0, { name: 'A' }), item(1, { email: 'b@example.com' }), item(2, { phone: '9', name: undefined })],
      'update',
    );
    expect(plans.map((p) => [p.kind, p.items.map((i) => i.index), p.input])).toEqual([
      ['create', [0, 2], { email: 'a@example.com', name: 'A', phone: '9' }],
      ['create', [1], { email: 'b@example.com' }],
    ]);
  });

  it('skip: an existing email, and a repeat within the batch, are skipped', () => {
    const reads = { ...none, emailOwner: (e: string) => (e === 'a@example.com' ? 5 : undefined) };
    expect(run([item(0, {}), item(1, {})], 'skip', reads)).toMatchObject({ plans: [], skipped: [0, 1] });
    expect(run([item(0, { email: 'n@example.com' }), item(1, { email: 'n@example.com' })], 'skip')).toMatchObject({ skipped: [1] });
  });

  it('update: an existing live customer is updated; one deleted meanwhile is created anew', () => {
    const live = { ...none, emailOwner: () => 5, customer: () => customer() };
    expect(run([item(0, { name: 'B' })], 'update', live).plans[0]).toMatchObject({
      kind: 'update',
      input: { email: 'a@example.com', name: 'B' },
    });
    const gone = { ...live, customer: () => customer({ deleted_at: '2026-02-01T00:00:00Z' }) };
    expect(run([item(0, {})], 'update', gone).plans[0].kind).toBe('create');
  });

  it("an external_id held by another customer or another plan refuses the item; the holder's own is fine", () => {
    const reads = { ...none, externalIdOwner: (x: string) => (x === 'X1' ? 7 : undefined) };
    expect(run([item(0, { external_id: 'X1' })], 'update', reads).failed).toEqual([[0, EXTERNAL_ID_TAKEN]]);
    expect(run([item(0, { external_id: 'X2' }), item(1, { email: 'b@example.com', external_id: 'X2' })], 'update').failed).toEqual([
      [1, EXTERNAL_ID_TAKEN],
    ]);
    const own = { ...none, emailOwner: () => 7, customer: () => customer({ id: 7 }), externalIdOwner: () => 7 };
    expect(run([item(0, { external_id: 'X1' })], 'update', own).failed).toEqual([]);
  });
});

describe('search', () => {
  const rows = [
    { id: 3, email: 'ann@shop.test', name: 'Ann' },
    { id: 2, email: 'bob@shop.test', name: 'Bob' },
    { id: 1, email: 'cy@other.test', name: 'Annika' },
  ];

  it('matches email or name, case-insensitively; an empty term is no search', () => {
    expect(searchTerm('  ANN ')).toBe('ann');
    expect(searchTerm('   ')).toBeUndefined();
    expect(searchPage('m1', rows, 'ann', { page: 1, per_page: 10 }).shown.map((r) => r.id)).toEqual([3, 1]);
  });

  it("pages by cursor after the last row shown, and refuses another search's cursor", () => {
    const first = searchPage('m1', rows, 'test', { page: 1, per_page: 2 });
    expect(first).toMatchObject({ offset: 0, total: 3 });
    const second = searchPage(
      'm1',
      rows.filter((r) => r.id !== 3),
      'test',
      { page: 1, per_page: 2, cursor: first.next! },
    );
    expect(second.shown.map((r) => r.id)).toEqual([1]);
    expect(second.next).toBeNull();
    expect(refusal(() => searchPage('m1', rows, 'ann', { page: 1, per_page: 2, cursor: first.next! }))).toHaveProperty('cursor');
    // Sealed for its merchant: the same search of another merchant refuses it.
    expect(refusal(() => searchPage('m2', rows, 'test', { page: 1, per_page: 2, cursor: first.next! }))).toHaveProperty('cursor');
  });
});
