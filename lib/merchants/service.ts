import { randomBytes } from 'node:crypto';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import { generateToken } from '#lib/auth/tokens';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { NotFoundError } from '#lib/errors';
import {
  changedMerchant,
  decideToken,
  issued,
  issuedDetails,
  newMerchant,
  tokenDetails,
  tokenStatusOf,
  type Merchant,
  type MerchantChanges,
  type TokenDetails,
  type TokenStatus,
} from '#lib/merchants/rules';
import * as store from '#lib/merchants/store';
import { formatTimestamp } from '#lib/shared/time';

/** Merchants and their single API token (docs/authentication-and-limits.md): read, decide (rules.ts), write (store.ts). */

export const createMerchant = async (name: string, reportingCurrency = config.defaultReportingCurrency()): Promise<Merchant> => {
  const merchant = newMerchant(`mer_${randomBytes(10).toString('hex')}`, name, reportingCurrency, formatTimestamp(now()));
  await store.putMerchant(merchant);
  return merchant;
};

/**
 * A merchant of a chosen id (`npm start`'s demo merchant): created when absent, and listed in the
 * merchant directory either way (the outbox sweeper and `ops merchant list` read it). True when created.
 */
export const ensureMerchant = async (merchantId: string, name: string, reportingCurrency: string): Promise<boolean> => {
  if (!(await store.getMerchantRecord(merchantId))) {
    await store.putMerchant(newMerchant(merchantId, name, reportingCurrency, formatTimestamp(now())));
    return true;
  }
  await store.listInDirectory(merchantId);
  return false;
};

/** The merchant itself, or read by id (404 when unknown); callers that already read it pass it. */
export const requireMerchant = async (merchantOrId: Merchant | string): Promise<Merchant> => {
  if (typeof merchantOrId !== 'string') return merchantOrId;
  const merchant = await store.getMerchant(merchantOrId);
  if (!merchant) throw new NotFoundError();
  return merchant;
};

/** The merchant's valid token, described; 404 when it has none (never created, or revoked). */
export const viewToken = async (merchantId: string): Promise<TokenDetails> => {
  const pointer = await store.getPointer(merchantId);
  if (pointer?.status !== 'active') throw new NotFoundError();
  return tokenDetails(pointer, await store.tokenLastUsedAt(pointer.token_hash));
};

export const tokenStatus = async (merchantId: string): Promise<TokenStatus> => {
  const pointer = await store.getPointer(merchantId);
  return tokenStatusOf(pointer, pointer ? await store.tokenLastUsedAt(pointer.token_hash) : null);
};

/** Creates the merchant's token; refused (409) while a valid one exists. The plain token is returned once. */
export const createToken = async (merchantOrId: Merchant | string, abilities: Ability[] = [...ABILITIES]) => {
  const merchant = await requireMerchant(merchantOrId);
  const token = generateToken();
  const details = issuedDetails(merchant, token, abilities, formatTimestamp(now()));
  await store.issueToken(merchant, token, details, null);
  return issued(merchant.merchant_id, token, details);
};

/** Replaces the valid token atomically: the old one is refused from the next request on. */
export const regenerateToken = async (merchantOrId: Merchant | string) => {
  const merchant = await requireMerchant(merchantOrId);
  const at = formatTimestamp(now());
  const plan = decideToken(await store.getPointer(merchant.merchant_id), { kind: 'regenerate' } as const, at);
  const token = generateToken();
  const details = issuedDetails(merchant, token, plan.abilities, at);
  await store.issueToken(merchant, token, details, plan.replaces);
  return issued(merchant.merchant_id, token, details);
};

/** Revokes the valid token, irreversibly. */
export const revokeToken = async (merchantId: string) => {
  const plan = decideToken(await store.getPointer(merchantId), { kind: 'revoke' } as const, formatTimestamp(now()));
  await store.writeTokenRevoked(merchantId, plan.tokenHash, plan.revokedAt);
  return { merchant_id: merchantId, revoked_at: plan.revokedAt };
};

/**
 * Deletes a merchant (operator CLI only): in one transaction the merchant item is marked deleted and
 * its valid token revoked, so the token is refused from the next request (401) and the back office
 * no longer resolves the merchant (401). Its data stays, as for soft-deleted customers; a deleted
 * merchant gets no new token (404). Unknown or already deleted: 404.
 */
export const deleteMerchant = async (merchantId: string) => {
  await requireMerchant(merchantId);
  const pointer = await store.getPointer(merchantId);
  const deletedAt = formatTimestamp(now());
  await store.markMerchantDeleted(merchantId, pointer?.status === 'active' ? pointer.token_hash : null, deletedAt);
  return { merchant_id: merchantId, deleted_at: deletedAt };
};

/** Changes a live merchant (read by id unless given); unknown or deleted: 404. Returns the merchant as changed. */
export const updateMerchant = async (merchantOrId: Merchant | string, changes: MerchantChanges): Promise<Merchant> => {
  const merchant = await requireMerchant(merchantOrId);
  const merchantId = merchant.merchant_id;
  // The token copies the zone and the delinquency days: a change of either rewrites it.
  const pointer = changes.timezone === undefined && changes.delinquency_days === undefined ? null : await store.getPointer(merchantId);
  await store.updateMerchantItem(merchantId, changes, pointer?.status === 'active' ? pointer.token_hash : null);
  return changedMerchant(merchant, changes);
};
