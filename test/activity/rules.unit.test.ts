import { describe, expect, it } from 'vitest';
import { cutToBytes, decideEntry, expiresAt, isListed, monthOf, oldestListedMonth, skipMessage } from '#lib/activity/rules';
import { batchCollector } from '#lib/shared/schemas';

describe('activity rules (in memory)', () => {
  it('keeps an entry for the 13 whole months after its month', () => {
    expect(monthOf('2026-01-31T23:59:59Z', 1)).toBe('2026-02');
    expect(monthOf('2026-11-05T00:00:00Z', 2)).toBe('2027-01');
    expect(oldestListedMonth('2027-02-28T23:59:59Z')).toBe('2026-01');
    expect(oldestListedMonth('2027-03-01T00:00:00Z')).toBe('2026-02');
    expect(new Date(expiresAt('2026-01-15T10:00:00Z') * 1000).toISOString()).toBe('2027-03-01T00:00:00.000Z');
    const entry = { created_at: '2026-01-15T10:00:00Z' };
    expect(isListed(entry, '2027-02-28T23:59:59Z')).toBe(true);
    expect(isListed(entry, '2027-03-01T00:00:00Z')).toBe(false);
  });

  it('cuts a string to a number of UTF-8 bytes on a code point, never splitting one', () => {
    expect(cutToBytes('short', 200)).toBe('short');
    const cut = cutToBytes('é'.repeat(150), 200); // 300 bytes
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(200);
    expect(cut).toBe(`${'é'.repeat(98)}…`);
    const emoji = cutToBytes('😀'.repeat(60), 20);
    expect(emoji).toBe('😀😀😀😀…');
    expect(Buffer.byteLength(emoji)).toBeLessThanOrEqual(20);
  });

  it("decides the entry: the whole request's counts (the last transaction's units as they will turn out), skipped and failed items with messages", () => {
    const c = batchCollector(5);
    c.created(0, 1, 'a');
    c.skipped(1, 'duplicate_email', 'b');
    c.failed(2, 'validation_error', 'The amount field is required.', 'x'.repeat(300));
    const entry = decideEntry(
      { id: 7, type: 'orders.batch', requestId: 'req-1', importRun: 'run_1', result: c.result(), pending: { created: 1, updated: 1 } },
      '2026-03-15T10:00:00Z',
    );
    expect(entry).toEqual({
      id: 7,
      type: 'orders.batch',
      created_at: '2026-03-15T10:00:00Z',
      total: 5,
      created: 2,
      updated: 1,
      skipped: 1,
      failed: 1,
      results: {
        skipped: [{ index: 1, identifier: 'b', reason: 'duplicate_email', message: skipMessage('duplicate_email') }],
        failed: [{ index: 2, identifier: `${'x'.repeat(197)}…`, reason: 'validation_error', message: 'The amount field is required.' }],
      },
      request_id: 'req-1',
      import_run: 'run_1',
    });
    expect(skipMessage('something_new')).toBe('The item was skipped (something_new).');
  });
});
