import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Publish } from '#lib/outbox/relay';
import { isLoopbackHost } from './dashboard.ts';

/**
 * `POST /dev/events/replay` `{merchant, since}`: `ops events replay` for the stack `npm start` runs.
 * Its bus lives in that process, so the CLI asks it to replay (lib/outbox/sweeper.ts `replayOutbox`,
 * as on AWS) onto the bus the relay publishes to, whose consumers then deliver as for any event.
 *
 * Only for this machine, like `/dev/session`: the connection must come from a loopback address and
 * name a loopback Host (a page of another site whose name points at 127.0.0.1 sends its own name),
 * carry no `Origin` (no browser page may call it) and send JSON (a cross-site form cannot).
 */
export const DEV_REPLAY_PATH = '/dev/events/replay';

export type DevReplayAnswer = { status: number; body: unknown };

const LOOPBACK_ADDRESS = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

/** Whether a request may use the dev endpoints: from this machine, to its loopback name, not from a page. */
export const fromThisMachine = (req: IncomingMessage): boolean =>
  LOOPBACK_ADDRESS.test(req.socket.remoteAddress ?? '') && isLoopbackHost(req.headers.host) && req.headers.origin === undefined;

/** The replay itself, publishing with `publish` (the local bus's PutEvents, or the emulator's). */
export const localReplay =
  (publish: Publish) =>
  async (input: unknown): Promise<DevReplayAnswer> => {
    const { merchant, since } = (input ?? {}) as { merchant?: unknown; since?: unknown };
    if (typeof merchant !== 'string' || typeof since !== 'string') {
      return { status: 422, body: { message: 'The body must be {"merchant": "mer_…", "since": "<ISO time>"}.' } };
    }
    const [{ getMerchant }, { replayOutbox, ReplayRangeError }] = await Promise.all([
      import('#lib/merchants/store'),
      import('#lib/outbox/sweeper'),
    ]);
    if (!(await getMerchant(merchant))) return { status: 404, body: { message: `Merchant ${merchant} does not exist.` } };
    try {
      const stats = await replayOutbox(merchant, since, { publish });
      return {
        status: 200,
        body: { merchant_id: merchant, since, events: stats.events, published: stats.published, unpublished: stats.unpublished },
      };
    } catch (err) {
      if (err instanceof ReplayRangeError) return { status: 422, body: { message: err.message } };
      throw err;
    }
  };

/**
 * The server's side: true when it answered the request (a request to the path from elsewhere is
 * answered nothing here, and falls through to the API's 404 like any unknown path).
 */
export const devReplayHandler =
  (replay: (input: unknown) => Promise<DevReplayAnswer>) =>
  async (req: IncomingMessage, res: ServerResponse, url: URL, body: string): Promise<boolean> => {
    if (url.pathname !== DEV_REPLAY_PATH || !fromThisMachine(req)) return false;
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(JSON.stringify(value));
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      json(405, { message: 'Method not allowed.' });
      return true;
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      json(415, { message: 'Send the body as application/json.' });
      return true;
    }
    let input: unknown;
    try {
      input = JSON.parse(body || '{}');
    } catch {
      json(400, { message: 'The body is not valid JSON.' });
      return true;
    }
    const answer = await replay(input);
    json(answer.status, answer.body);
    return true;
  };
