import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { now as clockNow } from '#lib/clock';
import { checkWebhookUrl, guardedLookup, URL_MESSAGES, type Resolver } from '#lib/webhooks/url-safety';

/**
 * One webhook delivery attempt (docs/webhook-endpoints.md): the body, the Standard Webhooks signature headers,
 * and a single POST to the endpoint. No queue, no retries here: the delivery consumer calls
 * `attemptDelivery` once per attempt and records the outcome (`lib/webhooks/deliveries.ts`).
 */

/** What a delivery needs of an event: the published `detail` (any extra fields are not sent). */
export type WebhookEvent = { id: string; type: string; created_at: string; data: { object: unknown } };

/**
 * The exact body of docs/webhook-endpoints.md, as JSON text: computed once per event, and these same bytes are
 * signed and sent on every attempt.
 */
export const webhookBody = (event: WebhookEvent): string =>
  JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: { object: event.data.object } });

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the event id, the same on every
 * retry), `webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`, one `v1,<sig>`
 * per secret, space-separated: the current secret first, then the previous one while it is still
 * valid (the caller decides which secrets to pass).
 */
export const signatureHeaders = (eventId: string, body: string, secrets: string[], now: Date): Record<string, string> => {
  if (!secrets.length) throw new Error('a webhook delivery needs at least one signing secret');
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(eventId, now, body)).join(' '),
  };
};

export const USER_AGENT = 'revenue-analytics-api-webhooks/1.0';
export const DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export type DeliveryAttempt = {
  url: string;
  eventId: string;
  /** `webhookBody(event)`: the bytes signed and sent. */
  body: string;
  /** Plain secrets, current first (see `signatureHeaders`). */
  secrets: string[];
  resolver?: Resolver;
  /** Local stack only: http to localhost / 127.0.0.1 / [::1] without resolving. */
  allowLocal: boolean;
  /** The whole attempt (connect, request, response headers) must finish within this. */
  timeoutMs?: number;
  /** At most this much of the response body is read; then the socket is destroyed. */
  maxResponseBytes?: number;
  /** The time the signature carries (default: the clock). */
  now?: Date;
};

export type DeliveryResult = {
  ok: boolean;
  /** The HTTP status, when a response arrived (a 3xx is a failure: redirects are never followed). */
  status?: number;
  /** Why no answer: COULD_NOT_CONNECT, or `refused url: …` (our own rule, no request made). */
  error?: string;
  durationMs: number;
};

/**
 * The one failure reported when no HTTP answer came: refused, reset, unreachable, a name that does
 * not resolve, a TLS failure and a timeout all read the same, so the test and retry answers cannot
 * tell a closed port from a silent one (the API is no port scanner). Receivers see the cause in
 * their own logs.
 */
export const COULD_NOT_CONNECT = 'could not connect';

/**
 * One POST of a signed event. The URL is checked again (DNS can change since registration); a
 * refused URL makes no request. The connection resolves through `guardedLookup`, so the address
 * connected to is an address that passed the check (no DNS rebinding in between). Success is a 2xx
 * within `timeoutMs`; redirects are not followed; at most `maxResponseBytes` of the answer is read.
 */
export const attemptDelivery = async (attempt: DeliveryAttempt): Promise<DeliveryResult> => {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeoutMs = attempt.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const maxBytes = attempt.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const opts = { resolver: attempt.resolver, allowLocal: attempt.allowLocal };

  const check = await checkWebhookUrl(attempt.url, opts);
  if (!check.ok) {
    if (check.message === URL_MESSAGES.unresolvable) return { ok: false, error: COULD_NOT_CONNECT, durationMs: elapsed() };
    return { ok: false, error: `refused url: ${check.refused ? `${check.refused} address` : check.message}`, durationMs: elapsed() };
  }
  const url = check.url;
  const payload = Buffer.from(attempt.body, 'utf8');
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(payload.length),
    'User-Agent': USER_AGENT,
    ...signatureHeaders(attempt.eventId, attempt.body, attempt.secrets, attempt.now ?? clockNow()),
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;

  return new Promise<DeliveryResult>((resolve) => {
    let settled = false;
    let status: number | undefined;
    const finish = (result: Omit<DeliveryResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ...result, durationMs: elapsed() });
    };
    const outcome = (code: number) => ({ ok: code >= 200 && code < 300, status: code });

    const req = request(url, {
      method: 'POST',
      headers,
      agent: false, // one connection per attempt: nothing pooled across endpoints
      lookup: guardedLookup(opts) as never,
    });
    const timer = setTimeout(() => {
      // Headers arrived in time: the answer stands, only the slow body is cut off.
      if (status !== undefined) finish(outcome(status));
      else finish({ ok: false, error: COULD_NOT_CONNECT });
    }, timeoutMs);

    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= maxBytes) finish(outcome(status!));
      });
      res.on('end', () => finish(outcome(status!)));
      res.on('error', () => finish(outcome(status!)));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (status !== undefined) return finish(outcome(status));
      // guardedLookup refused the resolved address: say which (the message names host and class).
      // Anything else (refused, reset, DNS, TLS) is one category, as a timeout is.
      const refusedAddress = err.code === 'EWEBHOOKADDR' && !err.message.endsWith(URL_MESSAGES.unresolvable);
      finish({ ok: false, error: refusedAddress ? `refused url: ${err.message}` : COULD_NOT_CONNECT });
    });
    req.end(payload);
  });
};
