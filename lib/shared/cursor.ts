import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync } from 'node:crypto';
import { config } from '#lib/config';

/**
 * Sealed cursors (docs/api-conventions.md, "Cursors"): a list's `next_cursor` names an index key,
 * which may hold a customer's email or external_id, so it is encrypted and authenticated
 * (AES-256-GCM) under a key derived per merchant (HKDF-SHA256 of the stack's cursor secret, the
 * merchant id as info). A cursor shows nothing of what it names, and one that was altered, or made
 * for another merchant, does not open.
 *
 * The nonce is an HMAC of the plaintext (a synthetic IV, as in SIV): the same position gives the
 * same cursor, so answers stay repeatable, and a nonce is only ever reused for the same message.
 *
 * Wire form: base64url of `version (1) | nonce (12) | ciphertext | tag (16)`.
 */

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The longest cursor accepted (and documented as `maxLength`): base64url, so as many bytes in a URL.
 * The cursors this service writes stay far below it (a key of at most ~1.3 KB of text, sealed).
 */
export const MAX_CURSOR_LENGTH = 4096;
/** The cursor's alphabet (base64url, no padding): one byte per character in a URL. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]+$';

/**
 * LOCAL DEVELOPMENT ONLY: a fixed, public secret (anyone reading this file has it), so the local
 * stack and the tests need no configuration. A deployed stage without CURSOR_SECRET refuses to start
 * a list rather than fall back to it.
 */
const DEVELOPMENT_SECRET = 'revenue-analytics-api: local-stack cursor secret, development only';

const secret = (): Buffer => {
  const configured = config.cursorSecret();
  if (configured) return Buffer.from(configured, 'utf8');
  if (!config.isLocal()) throw new Error('list cursors need CURSOR_SECRET outside the local stack');
  return Buffer.from(DEVELOPMENT_SECRET, 'utf8');
};

/** The merchant's two keys (encryption, nonce), derived from the secret; cached per secret and merchant. */
const keys = new Map<string, { enc: Buffer; nonce: Buffer }>();
const keysOf = (merchantId: string) => {
  const s = secret();
  const id = `${createHash('sha256').update(s).digest('base64url')}:${merchantId}`;
  let k = keys.get(id);
  if (!k) {
    const derived = Buffer.from(hkdfSync('sha256', s, 'revenue-analytics-api/cursor/v1', `merchant:${merchantId}`, 64));
    k = { enc: derived.subarray(0, 32), nonce: derived.subarray(32) };
    // Bounded: a function instance serves few merchants between cold starts, but never grows without end.
    if (keys.size >= 1000) keys.clear();
    keys.set(id, k);
  }
  return k;
};

/** `plain` sealed for `merchantId`. */
export const sealCursor = (merchantId: string, plain: string): string => {
  const { enc, nonce: nonceKey } = keysOf(merchantId);
  const body = Buffer.from(plain, 'utf8');
  const nonce = createHmac('sha256', nonceKey).update(body).digest().subarray(0, NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', enc, nonce);
  cipher.setAAD(Buffer.from([VERSION]));
  const sealed = Buffer.concat([cipher.update(body), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, sealed, cipher.getAuthTag()]).toString('base64url');
};

const CURSOR = new RegExp(CURSOR_PATTERN);

/** The plaintext of a cursor sealed for `merchantId`, or null (malformed, altered, or another merchant's). */
export const openCursor = (merchantId: string, raw: string): string | null => {
  if (raw.length > MAX_CURSOR_LENGTH || !CURSOR.test(raw)) return null;
  const bytes = Buffer.from(raw, 'base64url');
  // Only the one text a cursor is written as: Node's decoder ignores a dangling last character and
  // the unused low bits of the last one, so another text could open the same bytes.
  if (bytes.toString('base64url') !== raw) return null;
  if (bytes.length < 1 + NONCE_BYTES + TAG_BYTES || bytes[0] !== VERSION) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keysOf(merchantId).enc, bytes.subarray(1, 1 + NONCE_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.from([VERSION]));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(1 + NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
};
