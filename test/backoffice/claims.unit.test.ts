import { describe, expect, it } from 'vitest';
import { groupsOf, readClaims } from '#lib/auth/backoffice';
import { toGatewayClaims } from '../../infra/local/backoffice-jwt.ts';

/** Claims as API Gateway's JWT authorizer passes them (strings), and what the pipeline reads of them. */
describe('back-office claims', () => {
  it('reads groups in the form API Gateway passes them, and in the other forms a claim can take', () => {
    expect(groupsOf('[admin user]')).toEqual(['admin', 'user']);
    expect(groupsOf('[admin]')).toEqual(['admin']);
    expect(groupsOf('[]')).toEqual([]);
    expect(groupsOf('["admin","user"]')).toEqual(['admin', 'user']);
    expect(groupsOf('admin,user')).toEqual(['admin', 'user']);
    expect(groupsOf(['user'])).toEqual(['user']);
    expect(groupsOf(undefined)).toEqual([]);
    expect(groupsOf(42)).toEqual([]);
  });

  it('the local server shapes claims like API Gateway: strings, arrays as [a b]', () => {
    expect(
      toGatewayClaims({ 'cognito:groups': ['admin', 'user'], exp: 1700000000, 'custom:merchant_id': 'mer_1', email_verified: true }),
    ).toEqual({
      'cognito:groups': '[admin user]',
      exp: '1700000000',
      'custom:merchant_id': 'mer_1',
      email_verified: 'true',
    });
  });

  it('role: admin wins over user; merchant: only a well-formed merchant id', () => {
    expect(readClaims({ 'custom:merchant_id': 'mer_abc', 'cognito:groups': '[user admin]' })).toEqual({
      merchantId: 'mer_abc',
      role: 'admin',
    });
    expect(readClaims({ 'custom:merchant_id': 'mer_abc', 'cognito:groups': '[user]' })).toEqual({ merchantId: 'mer_abc', role: 'user' });
    expect(readClaims({ 'custom:merchant_id': 'mer_abc', 'cognito:groups': '[Admin]' }).role).toBeNull(); // group names are exact
    for (const bad of ['', 'mer_', 'M#mer_1', 'mer_1#TOKEN', 'cus_1', `mer_${'a'.repeat(65)}`]) {
      expect(readClaims({ 'custom:merchant_id': bad }).merchantId, bad).toBeNull();
    }
    expect(readClaims(undefined)).toEqual({ merchantId: null, role: null });
  });
});
