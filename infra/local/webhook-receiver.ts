import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A tiny webhook receiver for local development (`npm run ops -- webhooks listen`) and the
 * end-to-end tests: it verifies each delivery with the `standardwebhooks` package exactly as a
 * merchant's receiver would (signature, timestamp within 5 minutes) and answers 204, or 400 when
 * the signature does not verify. `respond` may choose another answer (to watch retries).
 */
export type ReceivedDelivery = {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The parsed event when the signature verified with one of the secrets; null otherwise. */
  // biome-ignore lint/suspicious/noExplicitAny: the payload's object is whatever resource the event names; callers read its fields
  event: { id: string; type: string; created_at: string; data: { object: any } } | null;
  /** Why verification failed (no secret given: "no secret"). */
  error?: string;
  receivedAt: number;
};

export type ReceiverOptions = {
  port?: number;
  /** 127.0.0.1 unless told. */
  host?: string;
  /** Endpoint secrets (`whsec_…`) to verify with; any one verifying is enough. */
  secrets?: string[];
  /** The status to answer (default 204 when verified, 400 when not). */
  respond?: (d: ReceivedDelivery, n: number) => number | Promise<number>;
  onDelivery?: (d: ReceivedDelivery) => void;
};

const header = (h: IncomingHttpHeaders, name: string): string => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : (v ?? '');
};

/** Checks a delivery against each secret, as a receiver does; the event when one verifies. */
export const verifyDelivery = (secrets: string[], headers: Record<string, string>, body: string) => {
  let error = secrets.length ? 'signature does not verify' : 'no secret';
  for (const secret of secrets) {
    try {
      return { event: new Webhook(secret).verify(body, headers) as ReceivedDelivery['event'], error: undefined };
    } catch (err) {
      error = (err as Error).message;
    }
  }
  return { event: null, error };
};

export const startWebhookReceiver = async (opts: ReceiverOptions = {}) => {
  const received: ReceivedDelivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = {
          'webhook-id': header(req.headers, 'webhook-id'),
          'webhook-timestamp': header(req.headers, 'webhook-timestamp'),
          'webhook-signature': header(req.headers, 'webhook-signature'),
        };
        const { event, error } = verifyDelivery(opts.secrets ?? [], headers, body);
        const delivery: ReceivedDelivery = {
          id: headers['webhook-id'],
          timestamp: headers['webhook-timestamp'],
          signature: headers['webhook-signature'],
          body,
          event,
          ...(error ? { error } : {}),
          receivedAt: Date.now(),
        };
        received.push(delivery);
        opts.onDelivery?.(delivery);
        const status = opts.respond ? await opts.respond(delivery, received.length) : event ? 204 : 400;
        res.writeHead(status).end();
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
};
