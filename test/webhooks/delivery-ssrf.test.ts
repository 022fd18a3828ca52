import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetResolver, setResolver } from '#lib/webhooks/url-safety';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder } from '../orders/helpers.ts';
import { deliveryLog, eventually, receiverWithEndpoint, registerEndpoint, useDeliveryPipeline } from './support/pipeline.ts';

/**
 * Server-side request forgery at delivery time (docs/webhook-endpoints.md): an endpoint registered while its
 * host resolved to a public address, whose DNS answer later changes to a refused address, gets no
 * request: its attempt is logged `refused url: <class> address`. Registration-time refusals are in
 * url-safety.test.ts; here every refused class goes through the running pipeline.
 *
 * No request made is shown two ways: each attempt's logged reason is the refusal (a connection let
 * through would reach port 443, the only port an endpoint may name, of a loopback or private
 * address and log "could not connect" or an HTTP status instead); and the resolver is asked once
 * per attempt (the URL check), never a second time (the connection's own lookup).
 */
process.env.WEBHOOK_RETRY_DELAYS_SECONDS = '60'; // one attempt per task while the file runs
const pipe = useDeliveryPipeline('wh-ssrf');
const api = useApi();

const PUBLIC = '93.184.216.34';
const answers = new Map<string, string[]>();
const lookups = new Map<string, number>();

beforeAll(async () => {
  setResolver(async (host) => {
    lookups.set(host, (lookups.get(host) ?? 0) + 1);
    const a = answers.get(host);
    if (!a) throw new Error(`ENOTFOUND ${host}`);
    return a;
  });
});
afterAll(async () => {
  resetResolver();
  delete process.env.WEBHOOK_RETRY_DELAYS_SECONDS;
});

/** [refused class, addresses the host resolves to at delivery time] */
const CASES: [string, string[]][] = [
  ['loopback', ['127.0.0.1']],
  ['loopback', ['127.0.0.2']],
  ['loopback', ['::1']],
  ['loopback', ['::ffff:127.0.0.1']],
  ['private', ['10.0.0.1']],
  ['private', ['172.16.0.1']],
  ['private', ['172.31.255.254']],
  ['private', ['192.168.1.1']],
  ['link-local', ['169.254.169.254']],
  ['shared (CGNAT)', ['100.64.0.1']],
  ['multicast', ['224.0.0.1']],
  ['unspecified', ['0.0.0.0']],
  ['unspecified', ['::']],
  ['private', ['fc00::1']],
  ['private', ['fd12:3456::1']],
  ['link-local', ['fe80::1']],
  ['multicast', ['ff02::1']],
  ['private', ['::ffff:10.0.0.1']],
  ['link-local', ['::ffff:169.254.169.254']],
  // Any refused address refuses the host, even beside a public one.
  ['private', [PUBLIC, '10.1.2.3']],
];

const hostOf = (i: number) => `rebind-${i}.hooks.example.com`;

describe('SSRF at delivery time', () => {
  it('a host whose DNS answer turned private after registration: the attempt is refused for every class, no connection made', async () => {
    // Two merchants (at most 20 endpoints each), each with a receiver on the allowed local URL:
    // its delivery shows the event reached the delivery stage.
    const merchants = await Promise.all(
      [0, 1].map(async (half) => {
        const { token } = await newMerchant();
        const endpoints: { id: number; host: string; cls: string; addresses: string[] }[] = [];
        for (const [i, [cls, addresses]] of CASES.entries()) {
          if (i % 2 !== half) continue;
          const host = hostOf(i);
          answers.set(host, [PUBLIC]);
          const e = await registerEndpoint(api, token, `https://${host}/hook`);
          endpoints.push({ id: e.id, host, cls, addresses });
        }
        const { receiver } = await receiverWithEndpoint(pipe, api, token);
        return { token, endpoints, receiver };
      }),
    );
    // DNS changes after registration.
    for (const { endpoints } of merchants) for (const e of endpoints) answers.set(e.host, e.addresses);
    const lookupsAtRegistration = new Map(lookups);

    for (const { token } of merchants) await createOrder(api, token, { status: 'pending' });
    for (const { token, endpoints, receiver } of merchants) {
      await eventually(() => receiver.received.length >= 1, 15_000, 'the allowed endpoint’s delivery');
      const logs = await eventually(
        async () => {
          const all = await Promise.all(endpoints.map((e) => deliveryLog(api, token, e.id)));
          return all.every((l) => l.length >= 1) ? all : undefined;
        },
        15_000,
        'an attempt logged for every endpoint',
        // Each check is one list request per endpoint: polled more slowly than a single read.
        250,
      );
      const outcomes = endpoints.map((e, i) => [e.addresses.join(' '), logs[i].map((d) => [d.attempt, d.status, d.error])]);
      expect(outcomes).toEqual(endpoints.map((e) => [e.addresses.join(' '), [[1, null, `refused url: ${e.cls} address`]]]));
    }
    // One lookup per attempt (the URL check); the connection's lookup never ran.
    for (const [i] of CASES.entries())
      expect((lookups.get(hostOf(i)) ?? 0) - (lookupsAtRegistration.get(hostOf(i)) ?? 0), hostOf(i)).toBe(1);
  }, 120_000);

  it('the test event and the manual retry check the URL again too', async () => {
    const { token } = await newMerchant();
    const host = 'turned-private.hooks.example.com';
    answers.set(host, [PUBLIC]);
    const endpoint = await registerEndpoint(api, token, `https://${host}/hook`);
    answers.set(host, ['10.0.0.7']);

    const test = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({ event_type: 'webhook.test', attempt: 1, status: null, error: 'refused url: private address' });
    const retry = await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${test.body.data.event_id}/retry`, token);
    expect(retry.status).toBe(200);
    expect(retry.body.data).toMatchObject({
      event_id: test.body.data.event_id,
      attempt: 2,
      status: null,
      error: 'refused url: private address',
    });
  });

  it('DNS rebinding between the check and the connection: the connection’s own lookup refuses it', async () => {
    const { token } = await newMerchant();
    const host = 'rebinding.hooks.example.com';
    answers.set(host, [PUBLIC]);
    const endpoint = await registerEndpoint(api, token, `https://${host}/hook`);
    // From now on: public for the URL check, then loopback for the connection.
    let n = 0;
    setResolver(async (h) => (h === host ? (n++ % 2 === 0 ? [PUBLIC] : ['127.0.0.1']) : (answers.get(h) ?? [])));
    try {
      const test = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
      expect(test.body.data).toMatchObject({ attempt: 1, status: null, error: `refused url: ${host}: refused loopback address` });
      expect(n).toBe(2);
    } finally {
      setResolver(async (h) => answers.get(h) ?? []);
    }
  });
});
