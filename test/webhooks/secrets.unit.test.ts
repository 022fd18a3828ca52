import { createHmac, randomBytes } from 'node:crypto';
import { type DecryptCommand, EncryptCommand } from '@aws-sdk/client-kms';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, newWebhookSecret, setKmsClient } from '#lib/webhooks/secrets';
import { withEnv } from '../pipeline/support.ts';

/**
 * Signing secrets: the Standard Webhooks format, encryption at rest bound to the merchant, the
 * local key and the KMS path (with a stand-in KMS client), and no fallback to the development key
 * outside the local stack.
 */

afterEach(() => setKmsClient(undefined));

const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('newWebhookSecret', () => {
  it('is whsec_ + base64 of 32 random bytes, and the standardwebhooks library signs and verifies with it', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const secret = newWebhookSecret();
      expect(secret).toMatch(SECRET_FORMAT);
      expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
      seen.add(secret);
    }
    expect(seen.size).toBe(50);

    const secret = newWebhookSecret();
    const payload = JSON.stringify({ id: 'evt_1', type: 'order.paid', data: { object: { order_no: 'A-1' } } });
    const at = new Date();
    const signature = new Webhook(secret).sign('evt_1', at, payload);
    // docs/webhook-endpoints.md: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")> with the key after whsec_.
    const timestamp = Math.floor(at.getTime() / 1000);
    const expected = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update(`evt_1.${timestamp}.${payload}`)
      .digest('base64');
    expect(signature).toBe(`v1,${expected}`);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    expect(new Webhook(secret).verify(payload, headers)).toEqual(JSON.parse(payload));
    expect(() => new Webhook(newWebhookSecret()).verify(payload, headers)).toThrow();
  });
});

describe('local AES-256-GCM (the local stack; the tests run with STAGE=local)', () => {
  it('round-trips; the stored form names its scheme and holds nothing of the secret; each encryption differs', async () => {
    const secret = newWebhookSecret();
    const a = await encryptSecret('mer_a', secret);
    const b = await encryptSecret('mer_a', secret);
    expect(a).toMatch(/^aes:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    for (const stored of [a, b]) {
      expect(stored).not.toContain(secret.slice(6));
      expect(stored).not.toContain(secret.slice(6, 20));
      expect(await decryptSecret('mer_a', stored)).toBe(secret);
    }
  });

  it("is bound to the merchant: another merchant's id does not decrypt it; tampering fails", async () => {
    const stored = await encryptSecret('mer_a', newWebhookSecret());
    await expect(decryptSecret('mer_b', stored)).rejects.toThrow();
    const raw = Buffer.from(stored.slice(4), 'base64');
    raw[raw.length - 1] ^= 1;
    await expect(decryptSecret('mer_a', `aes:${raw.toString('base64')}`)).rejects.toThrow();
    await expect(decryptSecret('mer_a', 'plain-text')).rejects.toThrow(/scheme/);
  });

  it('uses LOCAL_WEBHOOK_KEY when set (a secret made under one key does not open under another); a malformed key is refused', async () => {
    const key = randomBytes(32).toString('base64');
    const secret = newWebhookSecret();
    const stored = await withEnv({ LOCAL_WEBHOOK_KEY: key }, () => encryptSecret('mer_a', secret));
    expect(await withEnv({ LOCAL_WEBHOOK_KEY: key }, () => decryptSecret('mer_a', stored))).toBe(secret);
    // The development key (LOCAL_WEBHOOK_KEY unset) is another key.
    await expect(decryptSecret('mer_a', stored)).rejects.toThrow();
    await expect(withEnv({ LOCAL_WEBHOOK_KEY: randomBytes(16).toString('base64') }, () => encryptSecret('mer_a', secret))).rejects.toThrow(
      /32 bytes/,
    );
  });

  it('outside the local stack, without a KMS key id, refuses the development key (fails closed) but takes LOCAL_WEBHOOK_KEY', async () => {
    const saved = process.env.WEBHOOK_KMS_KEY_ID;
    delete process.env.WEBHOOK_KMS_KEY_ID;
    try {
      await expect(withEnv({ STAGE: 'prod' }, () => encryptSecret('mer_a', newWebhookSecret()))).rejects.toThrow(/WEBHOOK_KMS_KEY_ID/);
      const stored = await encryptSecret('mer_a', 'whsec_x');
      await expect(withEnv({ STAGE: 'prod' }, () => decryptSecret('mer_a', stored))).rejects.toThrow(/WEBHOOK_KMS_KEY_ID/);
      const key = randomBytes(32).toString('base64');
      const withKey = await withEnv({ STAGE: 'prod', LOCAL_WEBHOOK_KEY: key }, () => encryptSecret('mer_a', 'whsec_y'));
      expect(await withEnv({ STAGE: 'prod', LOCAL_WEBHOOK_KEY: key }, () => decryptSecret('mer_a', withKey))).toBe('whsec_y');
    } finally {
      if (saved !== undefined) process.env.WEBHOOK_KMS_KEY_ID = saved;
    }
  });
});

describe('KMS (WEBHOOK_KMS_KEY_ID set, outside the local stack)', () => {
  /** A stand-in for KMS: "encrypts" by wrapping, and checks the key and the encryption context like KMS does. */
  const fakeKms = () => {
    const calls: { command: string; input: any }[] = [];
    const blobs = new Map<string, { plaintext: Buffer; context: Record<string, string> }>();
    return {
      calls,
      send: async (command: EncryptCommand | DecryptCommand) => {
        calls.push({ command: command.constructor.name, input: command.input });
        if (command instanceof EncryptCommand) {
          const blob = randomBytes(24);
          blobs.set(blob.toString('hex'), { plaintext: Buffer.from(command.input.Plaintext!), context: command.input.EncryptionContext! });
          return { CiphertextBlob: blob, KeyId: command.input.KeyId };
        }
        const found = blobs.get(Buffer.from(command.input.CiphertextBlob!).toString('hex'));
        if (!found || JSON.stringify(found.context) !== JSON.stringify(command.input.EncryptionContext)) {
          throw Object.assign(new Error('InvalidCiphertextException'), { name: 'InvalidCiphertextException' });
        }
        return { Plaintext: new Uint8Array(found.plaintext) };
      },
    };
  };

  it('encrypts with the configured key and the {merchant_id} context; decrypts only with the same merchant', async () => {
    const kms = fakeKms();
    setKmsClient(kms as never);
    const secret = newWebhookSecret();
    const env = { STAGE: 'prod', WEBHOOK_KMS_KEY_ID: 'arn:aws:kms:us-east-1:111122223333:key/test' };
    const stored = await withEnv(env, () => encryptSecret('mer_a', secret));
    expect(stored).toMatch(/^kms:[A-Za-z0-9+/]+=*$/);
    expect(stored).not.toContain(secret.slice(6));
    expect(kms.calls).toHaveLength(1);
    expect(kms.calls[0].command).toBe('EncryptCommand');
    expect(kms.calls[0].input).toMatchObject({ KeyId: env.WEBHOOK_KMS_KEY_ID, EncryptionContext: { merchant_id: 'mer_a' } });
    expect(Buffer.from(kms.calls[0].input.Plaintext).toString()).toBe(secret);

    expect(await withEnv(env, () => decryptSecret('mer_a', stored))).toBe(secret);
    expect(kms.calls[1]).toMatchObject({ command: 'DecryptCommand', input: { EncryptionContext: { merchant_id: 'mer_a' } } });
    await expect(withEnv(env, () => decryptSecret('mer_b', stored))).rejects.toThrow(/InvalidCiphertext/);
  });

  it('the local stack never calls KMS to encrypt, even with a key id configured', async () => {
    const kms = fakeKms();
    setKmsClient(kms as never);
    const stored = await withEnv({ WEBHOOK_KMS_KEY_ID: 'arn:aws:kms:us-east-1:111122223333:key/test' }, () =>
      encryptSecret('mer_a', 'whsec_z'),
    );
    expect(stored.startsWith('aes:')).toBe(true);
    expect(kms.calls).toEqual([]);
  });
});
