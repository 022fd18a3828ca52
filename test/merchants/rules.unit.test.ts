import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '#lib/errors';
import {
  changedMerchant,
  zoneOf,
  decideToken,
  issued,
  issuedDetails,
  newMerchant,
  presentIssued,
  presentMerchantRecord,
  tokenExists,
  tokenStatusOf,
  type TokenPointer,
} from '#lib/merchants/rules';

/** Merchants and their single token, in memory: what a token command may do, and what is shown of a token. */

const AT = '2026-11-26T10:00:00Z';
const merchant = newMerchant('mer_1', 'Shop', 'usd', AT);
const pointer = (over: Partial<TokenPointer> = {}): TokenPointer => ({
  token_hash: 'h-old',
  status: 'active',
  abilities: ['orders:read'],
  prefix: 'ras_Abcd',
  last_four: 'wxyz',
  created_at: '2026-01-01T00:00:00Z',
  reporting_currency: 'USD',
  ...over,
});

describe('a merchant', () => {
  it('keeps its reporting currency in capitals, starts in UTC, and changes only its name and time zone', () => {
    expect(merchant).toEqual({ merchant_id: 'mer_1', name: 'Shop', reporting_currency: 'USD', timezone: 'UTC', created_at: AT });
    const changed = changedMerchant(merchant, { name: 'Shop 2', reporting_currency: 'EUR' } as never);
    expect(changed).toEqual({ ...merchant, name: 'Shop 2' });
    expect(changedMerchant(merchant, { timezone: 'Asia/Taipei' })).toEqual({ ...merchant, timezone: 'Asia/Taipei' });
    // A merchant stored before time zones existed reads as UTC.
    const { timezone: _, ...older } = merchant;
    expect(presentMerchantRecord(older)).toMatchObject({ timezone: 'UTC' });
    expect(zoneOf(older)).toBe('UTC');
    expect(presentMerchantRecord({ ...merchant, deleted_at: AT })).toMatchObject({ deleted: true, deleted_at: AT });
    expect(presentMerchantRecord(merchant)).toMatchObject({ deleted: false, deleted_at: null });
  });
});

describe('token commands', () => {
  it('regenerate: a new token with the abilities of the valid one, replacing its hash', () => {
    expect(decideToken(pointer({ abilities: ['orders:read', 'analytics:read'] }), { kind: 'regenerate' }, AT)).toEqual({
      kind: 'issue',
      abilities: ['orders:read', 'analytics:read'],
      replaces: 'h-old',
    });
  });

  it('revoke: the valid token, at the time given', () => {
    expect(decideToken(pointer(), { kind: 'revoke' }, AT)).toEqual({ kind: 'revoke', tokenHash: 'h-old', revokedAt: AT });
  });

  it('both refuse with 404 when there is no valid token (never created, or revoked)', () => {
    for (const current of [null, pointer({ status: 'revoked', revoked_at: AT })]) {
      expect(() => decideToken(current, { kind: 'regenerate' }, AT)).toThrow(NotFoundError);
      expect(() => decideToken(current, { kind: 'revoke' }, AT)).toThrow(NotFoundError);
    }
  });

  it('a create refused by its condition is a 409 that says what to do', () => {
    const err = tokenExists();
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.message).toBe('A valid token already exists. Revoke it before creating a new one.');
  });
});

describe('what is shown of a token', () => {
  it('an issued token: the value once, its first 8 and last 4 characters; the back office gets no merchant id', () => {
    const token = 'ras_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0';
    const details = issuedDetails(merchant, token, ['customers:read'], AT);
    expect(details).toEqual({
      abilities: ['customers:read'],
      prefix: 'ras_Q1w2',
      last_four: 'L9z0',
      created_at: AT,
      reporting_currency: 'USD',
      timezone: 'UTC',
    });
    const answer = issued('mer_1', token, details);
    expect(answer).toMatchObject({ token, merchant_id: 'mer_1', last_used_at: null });
    expect(presentIssued(answer)).not.toHaveProperty('merchant_id');
    expect(presentIssued(answer)).not.toHaveProperty('reporting_currency');
  });

  it('its status: none, active or revoked (with when), never the hash', () => {
    expect(tokenStatusOf(null, null)).toEqual({ status: 'none' });
    const active = tokenStatusOf(pointer(), '2026-11-01T00:00:00Z');
    expect(active).toEqual({
      status: 'active',
      prefix: 'ras_Abcd',
      last_four: 'wxyz',
      abilities: ['orders:read'],
      created_at: '2026-01-01T00:00:00Z',
      last_used_at: '2026-11-01T00:00:00Z',
    });
    expect(tokenStatusOf(pointer({ status: 'revoked', revoked_at: AT }), null)).toMatchObject({ status: 'revoked', revoked_at: AT });
    expect(JSON.stringify(tokenStatusOf(pointer({ status: 'revoked' }), null))).not.toContain('h-old');
  });
});
