import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { config } from '#lib/config';
import { traced } from '#lib/observability';

/**
 * Webhook signing secrets (docs/webhook-endpoints.md): `whsec_` + base64 of 32 random bytes, returned to the
 * merchant at creation and rotation only, stored encrypted, never logged.
 *
 * - In AWS (`WEBHOOK_KMS_KEY_ID` set, stage not `local`): KMS Encrypt/Decrypt with the encryption
 *   context `{merchant_id}`, so a ciphertext only decrypts for the merchant it was made for (and
 *   CloudTrail records which merchant's secret was used). Stored as `kms:<base64 blob>`.
 * - In the local stack (STAGE=local, or no key id): AES-256-GCM with the merchant id as additional
 *   data, under the key in `LOCAL_WEBHOOK_KEY` (base64 of 32 bytes) or, when unset and only in the
 *   local stack, a fixed development key derived below. Stored as `aes:<base64 iv|tag|ciphertext>`.
 *   A deployed stage without a KMS key id refuses to fall back to the development key.
 *
 * The stored form names its scheme, so a secret decrypts with whichever scheme encrypted it.
 */

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/**
 * LOCAL DEVELOPMENT ONLY. A fixed, public key (anyone reading this file has it), so that the local
 * stack needs no configuration. Never used outside STAGE=local.
 */
const DEVELOPMENT_KEY = createHash('sha256').update('revenue-analytics-api: local-stack webhook secret key, development only').digest();

const KMS_PREFIX = 'kms:';
const AES_PREFIX = 'aes:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const kmsKeyId = (): string | undefined => process.env.WEBHOOK_KMS_KEY_ID || undefined;
const useKms = (): boolean => !config.isLocal() && kmsKeyId() !== undefined;

const localKey = (): Buffer => {
  const configured = process.env.LOCAL_WEBHOOK_KEY;
  if (configured) {
    const key = Buffer.from(configured, 'base64');
    if (key.length !== 32) throw new Error('LOCAL_WEBHOOK_KEY must be the base64 form of 32 bytes');
    return key;
  }
  if (!config.isLocal()) {
    throw new Error('webhook secrets need WEBHOOK_KMS_KEY_ID (or LOCAL_WEBHOOK_KEY) outside the local stack');
  }
  return DEVELOPMENT_KEY;
};

type KmsLike = Pick<KMSClient, 'send'>;
let kms: KmsLike | undefined;
const kmsClient = (): KmsLike => (kms ??= traced(new KMSClient({ region: config.region() })));
/** Test hook: a stand-in KMS client (undefined restores the real one). */
export const setKmsClient = (client: KmsLike | undefined): void => {
  kms = client;
};

const context = (merchantId: string) => ({ merchant_id: merchantId });

/** Encrypts a plain secret for storage under the merchant. */
export const encryptSecret = async (merchantId: string, plain: string): Promise<string> => {
  if (useKms()) {
    const out = await kmsClient().send(
      new EncryptCommand({ KeyId: kmsKeyId(), Plaintext: Buffer.from(plain, 'utf8'), EncryptionContext: context(merchantId) }),
    );
    if (!out.CiphertextBlob) throw new Error('KMS Encrypt returned no ciphertext');
    return `${KMS_PREFIX}${Buffer.from(out.CiphertextBlob).toString('base64')}`;
  }
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', localKey(), iv);
  cipher.setAAD(Buffer.from(merchantId, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${AES_PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
};

/** Decrypts a stored secret of this merchant (fails for another merchant's ciphertext). */
export const decryptSecret = async (merchantId: string, stored: string): Promise<string> => {
  if (stored.startsWith(KMS_PREFIX)) {
    const out = await kmsClient().send(
      new DecryptCommand({
        CiphertextBlob: Buffer.from(stored.slice(KMS_PREFIX.length), 'base64'),
        EncryptionContext: context(merchantId),
      }),
    );
    if (!out.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
    return Buffer.from(out.Plaintext).toString('utf8');
  }
  if (stored.startsWith(AES_PREFIX)) {
    const raw = Buffer.from(stored.slice(AES_PREFIX.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', localKey(), raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(merchantId, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
  throw new Error('unknown webhook secret encryption scheme');
};
