import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Cursors are sealed (docs/api-conventions.md, "Cursors"): a cursor shows nothing of the keys it
 * names (a customer's email, an order_no) however it is decoded, and one that was altered, or made
 * for another merchant, is a 422 on `cursor`, never a page.
 */
const api = useApi();
const CURSOR_INVALID = 'The cursor field must be a meta.next_cursor value returned by this list with the same filters.';

/** Every reading of a cursor someone might try: as it is, URL-decoded, and its bytes as text. */
const decodings = (cursor: string): string[] => {
  const bytes = [Buffer.from(cursor, 'base64url'), Buffer.from(cursor, 'base64')];
  return [
    cursor,
    decodeURIComponent(cursor),
    ...bytes.flatMap((b) => [b.toString('utf8'), b.toString('latin1'), b.toString('utf16le'), b.toString('hex')]),
  ].map((s) => s.toLowerCase());
};

/** One character changed where it changes the bytes (base64url keeps its alphabet). */
const tamper = (cursor: string, at: number) => {
  const c = cursor[at];
  return `${cursor.slice(0, at)}${c === 'A' ? 'B' : 'A'}${cursor.slice(at + 1)}`;
};

const refusedOnCursor = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body)).toBe(422);
  expect(r.body.errors).toEqual({ cursor: [CURSOR_INVALID] });
};

describe('list cursors', () => {
  it('show no customer email or order_no, in any decoding', async () => {
    const { token } = await newMerchant();
    const emails = ['zelda.secret+vip@hidden-domain.example', 'yuri.private@hidden-domain.example', 'xena@hidden-domain.example'];
    for (const email of emails) expect((await api.post('/customers', token, { email, name: 'Someone' })).status).toBe(201);
    const orderNos = ['ORDER-CONFIDENTIAL-1', 'ORDER-CONFIDENTIAL-2', 'ORDER-CONFIDENTIAL-3'];
    for (const order_no of orderNos)
      expect((await api.post('/orders', token, { order_no, amount: '10.00', customer_email: emails[0] })).status).toBe(201);

    const cursors: string[] = [];
    for (const path of [
      '/customers?per_page=1',
      '/orders?per_page=1',
      `/orders?per_page=1&customer_email=${encodeURIComponent(emails[0])}`,
    ]) {
      let next: string | null = (await api.get(path, token)).body.meta.next_cursor;
      while (next) {
        cursors.push(next);
        const r = await api.get(`${path}&cursor=${next}`, token);
        expect(r.status).toBe(200);
        next = r.body.meta.next_cursor;
      }
    }
    expect(cursors.length).toBe(2 + 2 + 2);
    for (const cursor of cursors) {
      expect(cursor).toMatch(/^[A-Za-z0-9_-]{1,4096}$/);
      for (const text of decodings(cursor)) {
        for (const secret of [...emails, ...orderNos, 'hidden-domain', 'confidential', 'customer_email', 'order#'])
          expect(text.includes(secret.toLowerCase()), `${cursor} shows ${secret}`).toBe(false);
      }
    }
  });

  it('refuses an altered cursor, and another merchant’s, with a 422 on cursor', async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    for (const m of [a, b])
      for (const email of ['one@example.com', 'two@example.com', 'three@example.com'])
        expect((await api.post('/customers', m.token, { email })).status).toBe(201);
    const cursor: string = (await api.get('/customers?per_page=1', a.token)).body.meta.next_cursor;
    expect((await api.get(`/customers?per_page=1&cursor=${cursor}`, a.token)).status).toBe(200);

    // Any changed byte (version, nonce, sealed text, tag), a cut, or one more character.
    for (const at of [0, 2, 10, Math.floor(cursor.length / 2), cursor.length - 3, cursor.length - 1])
      refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${tamper(cursor, at)}`, a.token));
    refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${cursor.slice(0, -4)}`, a.token));
    refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${cursor}A`, a.token));
    // The earlier, unsealed form: readable JSON naming a key.
    const plain = Buffer.from(JSON.stringify(['x', 1, { pk: 'M#x#CUSTOMER_EMAIL#one@example.com', sk: 'MARKER' }])).toString('base64url');
    refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${plain}`, a.token));

    // Merchant B's same list, same position: A's cursor does not open for B.
    refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${cursor}`, b.token));
    const bCursor: string = (await api.get('/customers?per_page=1', b.token)).body.meta.next_cursor;
    expect(bCursor).not.toBe(cursor);
    refusedOnCursor(await api.get(`/customers?per_page=1&cursor=${bCursor}`, a.token));
  });

  it('refuses a cursor outside the documented bytes with a 422, never a 414', async () => {
    const { token } = await newMerchant();
    refusedOnCursor(await api.get(`/customers?cursor=${'A'.repeat(4096)}`, token));
    const long = await api.get(`/customers?cursor=${'A'.repeat(4097)}`, token);
    expect([long.status, long.body.errors]).toEqual([422, { cursor: ['The cursor field must not be greater than 4096 characters.'] }]);
    refusedOnCursor(await api.get(`/orders?cursor=${encodeURIComponent('abc/def=')}`, token));
    refusedOnCursor(await api.get(`/activity?cursor=${encodeURIComponent('é'.repeat(100))}`, token));
  });
});
