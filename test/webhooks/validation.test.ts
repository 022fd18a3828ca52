import { INVALID_DATA as INVALID } from '#lib/errors';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetResolver, setResolver, URL_MESSAGES } from '#lib/webhooks/url-safety';
import { newMerchant, useApi } from '../support/api.ts';
import { withEnv } from '../pipeline/support.ts';

/**
 * Field-by-field validation of POST and PATCH /webhook-endpoints (docs/api-conventions.md), the URL
 * rules at registration through the API (SSRF: host names resolving to refused addresses, through
 * the resolver test hook) and the production-mode https rule. Every 422 is checked for its exact
 * body, and that nothing was stored.
 */

const api = useApi();

const HOSTS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14'],
  'internal.example.com': ['10.0.0.5'],
  'corp.example.com': ['172.20.1.1'],
  'home.example.com': ['192.168.1.20'],
  'metadata.example.com': ['169.254.169.254'],
  'loop.example.com': ['127.0.0.1'],
  'loop6.example.com': ['::1'],
  'cgnat.example.com': ['100.64.3.4'],
  'ula.example.com': ['fd00:ec2::254'],
  'linklocal6.example.com': ['fe80::a9fe:a9fe'],
  'mapped.example.com': ['::ffff:10.0.0.1'],
  'multicast.example.com': ['239.1.2.3'],
  'multicast6.example.com': ['ff02::1'],
  'zero.example.com': ['0.0.0.0'],
  'zero6.example.com': ['::'],
  'broadcast.example.com': ['255.255.255.255'],
  'dualstack-bad.example.com': ['93.184.215.14', 'fd00::5'],
  'empty.example.com': [],
  localhost: ['127.0.0.1', '::1'],
};
const asked: string[] = [];
beforeAll(() =>
  setResolver(async (host) => {
    asked.push(host);
    const found = HOSTS[host];
    if (!found) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  }),
);
afterAll(() => resetResolver());

type Body = Record<string, unknown>;
type Merchant = { merchantId: string; token: string };

const valid = (over: Body = {}): Body => ({ url: 'https://hooks.example.com/receive', events: ['order.paid'], ...over });

/** What a merchant can see of its endpoints (each by id too). */
const snapshot = async (token: string) => {
  const list = await api.get('/webhook-endpoints?per_page=100', token);
  expect(list.status).toBe(200);
  const byId = await Promise.all(list.body.data.map(async (e: any) => (await api.get(`/webhook-endpoints/${e.id}`, token)).body.data));
  return { list: list.body.data, total: list.body.meta.total, byId };
};

const expect422 = (res: { status: number; body: any }, errors: Record<string, string[]>, label = '') => {
  expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(422);
  expect(res.body, label).toEqual({ message: INVALID, errors });
};

const REFUSED = [URL_MESSAGES.refused];

type Case = [string, Body, Record<string, string[]>];

const urlCases = (base: (over: Body) => Body): Case[] => [
  ['url null', base({ url: null }), { url: ['The url field is required.'] }],
  ['url empty', base({ url: '' }), { url: ['The url field is required.'] }],
  ['url a number', base({ url: 42 }), { url: ['The url field must be a string.'] }],
  ['url an object', base({ url: { href: 'https://hooks.example.com' } }), { url: ['The url field must be a string.'] }],
  ['url not a URL', base({ url: 'not a url' }), { url: [URL_MESSAGES.invalid] }],
  ['url without a scheme', base({ url: 'hooks.example.com/receive' }), { url: [URL_MESSAGES.invalid] }],
  ['url relative', base({ url: '/receive' }), { url: [URL_MESSAGES.invalid] }],
  ['url ftp', base({ url: 'ftp://hooks.example.com/' }), { url: [URL_MESSAGES.invalid] }],
  ['url file', base({ url: 'file:///etc/passwd' }), { url: [URL_MESSAGES.invalid] }],
  [
    'url over 2048 characters',
    base({ url: `https://hooks.example.com/${'a'.repeat(2049 - 26)}` }),
    { url: ['The url field must not be greater than 2048 characters.'] },
  ],
  ['url with user info', base({ url: 'https://user:pass@hooks.example.com/' }), { url: [URL_MESSAGES.userinfo] }],
  ['url with a user name', base({ url: 'https://user@hooks.example.com/' }), { url: [URL_MESSAGES.userinfo] }],
  ['url http to a public host (local stack)', base({ url: 'http://hooks.example.com/' }), { url: [URL_MESSAGES.httpsLocal] }],
  ['url http to a private address (local stack)', base({ url: 'http://10.0.0.1/' }), { url: [URL_MESSAGES.httpsLocal] }],
];

/** Refused at registration: literals and host names resolving to each refused class (the resolver hook). */
const ssrfCases = (base: (over: Body) => Body): Case[] => [
  ...[
    'https://10.0.0.1/',
    'https://172.16.5.4/',
    'https://192.168.0.1/',
    'https://127.0.0.2/', // loopback other than the local stack's exact 127.0.0.1
    'https://169.254.169.254/latest/meta-data/',
    'https://0xa9fea9fe/', // 169.254.169.254 in hex
    'https://100.64.0.1/',
    'https://224.0.0.1/',
    'https://0.0.0.0/',
    'https://255.255.255.255/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[ff02::1]/',
    'https://[::]/',
    'https://[::ffff:10.0.0.1]/',
    'https://[::ffff:169.254.169.254]/',
  ].map((url): Case => [`literal ${url}`, base({ url }), { url: REFUSED }]),
  ...Object.entries(HOSTS)
    .filter(([host]) => !['hooks.example.com', 'empty.example.com', 'localhost'].includes(host))
    .map(([host, addresses]): Case => [`${host} → ${addresses.join(', ')}`, base({ url: `https://${host}/hook` }), { url: REFUSED }]),
  ['a name that does not resolve', base({ url: 'https://nowhere.example.com/' }), { url: [URL_MESSAGES.unresolvable] }],
  ['a name that resolves to nothing', base({ url: 'https://empty.example.com/' }), { url: [URL_MESSAGES.unresolvable] }],
];

const eventCases = (base: (over: Body) => Body): Case[] => [
  ['events null', base({ events: null }), { events: ['The events field is required.'] }],
  ['events empty', base({ events: [] }), { events: ['The events field must contain at least 1 item.'] }],
  ['events a string', base({ events: 'order.paid' }), { events: ['The events field must be an array.'] }],
  ['events an object', base({ events: { 0: 'order.paid' } }), { events: ['The events field must be an array.'] }],
  [
    'events with an unknown type',
    base({ events: ['order.paid', 'order.shipped'] }),
    {
      'events.1': [
        'The selected events.1 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
    },
  ],
  [
    'events with two unknown types',
    base({ events: ['nope', 'order.paid', 'Order.Paid'] }),
    {
      'events.0': [
        'The selected events.0 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
      'events.2': [
        'The selected events.2 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
    },
  ],
  [
    'events with a non-string',
    base({ events: [5] }),
    {
      'events.0': [
        'The selected events.0 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
    },
  ],
  [
    'events with null',
    base({ events: ['order.paid', null] }),
    {
      'events.1': [
        'The selected events.1 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
    },
  ],
  [
    'events with a wildcard prefix',
    base({ events: ['order.*'] }),
    {
      'events.0': [
        'The selected events.0 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
      ],
    },
  ],
  [
    'events "*" mixed with a type',
    base({ events: ['*', 'order.paid'] }),
    { events: ['The events field must be ["*"] alone or a list of event types.'] },
  ],
  [
    'events a type then "*"',
    base({ events: ['order.paid', '*'] }),
    { events: ['The events field must be ["*"] alone or a list of event types.'] },
  ],
  [
    'events over 100 items',
    base({ events: Array.from({ length: 101 }, () => 'order.paid') }),
    { events: ['The events field must not have more than 100 items.'] },
  ],
];

const descriptionCases = (base: (over: Body) => Body): Case[] => [
  [
    'description over 255',
    base({ description: 'd'.repeat(256) }),
    { description: ['The description field must not be greater than 255 characters.'] },
  ],
  ['description a number', base({ description: 7 }), { description: ['The description field must be a string.'] }],
  ['description an array', base({ description: ['x'] }), { description: ['The description field must be a string.'] }],
];

// ---------------------------------------------------------------------------------------------

describe('POST /webhook-endpoints: validation', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
    const r = await api.post('/webhook-endpoints', m.token, valid());
    expect(r.status).toBe(201);
  });

  const cases: Case[] = [
    ['empty body', {}, { url: ['The url field is required.'], events: ['The events field is required.'] }],
    ['url missing', valid({ url: undefined }), { url: ['The url field is required.'] }],
    ['events missing', valid({ events: undefined }), { events: ['The events field is required.'] }],
    [
      'url and events both invalid',
      valid({ url: 'nope', events: ['nope'] }),
      {
        url: [URL_MESSAGES.invalid],
        'events.0': [
          'The selected events.0 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
        ],
      },
    ],
    ...urlCases(valid),
    ...ssrfCases(valid),
    ...eventCases(valid),
    ...descriptionCases(valid),
  ];

  it.each(cases)('%s → 422, nothing stored', async (label, body, errors) => {
    const before = await snapshot(m.token);
    expect422(await api.post('/webhook-endpoints', m.token, body), errors, label);
    expect(await snapshot(m.token)).toEqual(before);
  });

  it('the address check runs once the body is otherwise valid (no lookup for a refused body)', async () => {
    asked.length = 0;
    expect422(await api.post('/webhook-endpoints', m.token, valid({ url: 'https://internal.example.com/', events: [] })), {
      events: ['The events field must contain at least 1 item.'],
    });
    expect(asked).toEqual([]);
    expect422(await api.post('/webhook-endpoints', m.token, valid({ url: 'https://internal.example.com/' })), { url: REFUSED });
    expect(asked).toEqual(['internal.example.com']);
  });

  it('a body that is not an object, or not JSON', async () => {
    expect422(await api.post('/webhook-endpoints', m.token, ['https://hooks.example.com/']), {
      body: ['The body field must be an object.'],
    });
    const bad = await api.request('POST', '/webhook-endpoints', {
      token: m.token,
      rawBody: '{"url": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ message: 'The request body is not valid JSON.' });
  });
});

describe('PATCH /webhook-endpoints/{id}: validation', () => {
  let m: Merchant;
  let id: number;
  beforeAll(async () => {
    m = await newMerchant();
    const r = await api.post('/webhook-endpoints', m.token, valid({ description: 'keep me' }));
    expect(r.status).toBe(201);
    id = r.body.data.id;
  });

  const only = (over: Body): Body => over;
  const cases: Case[] = [
    ...urlCases(only),
    ...ssrfCases(only),
    ...eventCases(only),
    ...descriptionCases(only),
    ['status null', { status: null }, { status: ['The status field is required.'] }],
    ['status unknown', { status: 'paused' }, { status: ['The selected status is invalid. Allowed: enabled, disabled.'] }],
    ['status upper case', { status: 'ENABLED' }, { status: ['The selected status is invalid. Allowed: enabled, disabled.'] }],
    ['status a boolean', { status: true }, { status: ['The selected status is invalid. Allowed: enabled, disabled.'] }],
    [
      'several fields at once',
      { url: 'ftp://x/', events: [], status: 'off', description: 'd'.repeat(300) },
      {
        url: [URL_MESSAGES.invalid],
        events: ['The events field must contain at least 1 item.'],
        description: ['The description field must not be greater than 255 characters.'],
        status: ['The selected status is invalid. Allowed: enabled, disabled.'],
      },
    ],
    [
      'a valid field beside an invalid one changes nothing',
      { description: 'changed', events: ['bogus'] },
      {
        'events.0': [
          'The selected events.0 is invalid. Allowed: order.created, order.paid, order.failed, order.refunded, order.cancelled, subscription.created, subscription.updated, subscription.paused, subscription.reactivated, subscription.cancelled, subscription.trial_converted, subscription.trial_cancelled, subscription.past_due, subscription.recovered, *.',
        ],
      },
    ],
  ];

  it.each(cases)('%s → 422, nothing changes', async (label, body, errors) => {
    const before = await snapshot(m.token);
    expect422(await api.patch(`/webhook-endpoints/${id}`, m.token, body), errors, label);
    expect(await snapshot(m.token)).toEqual(before);
  });
});

describe('outside the local stack (STAGE=prod)', () => {
  // A deployed stage encrypts with KMS; here a configured local key stands in for it.
  const prod = { STAGE: 'prod', LOCAL_WEBHOOK_KEY: randomBytes(32).toString('base64') };

  it('http is refused even to localhost; https to loopback is an address refusal; https to a public host is accepted', async () => {
    const m = await newMerchant();
    await withEnv(prod, async () => {
      for (const url of ['http://localhost:4000/hooks', 'http://127.0.0.1/', 'http://[::1]/', 'http://hooks.example.com/']) {
        expect422(await api.post('/webhook-endpoints', m.token, valid({ url })), { url: [URL_MESSAGES.https] }, url);
      }
      for (const url of ['https://localhost/', 'https://127.0.0.1/', 'https://[::1]/', 'https://loop.example.com/']) {
        expect422(await api.post('/webhook-endpoints', m.token, valid({ url })), { url: REFUSED }, url);
      }
      const ok = await api.post('/webhook-endpoints', m.token, valid());
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
      expect422(await api.patch(`/webhook-endpoints/${ok.body.data.id}`, m.token, { url: 'http://localhost:4000/' }), {
        url: [URL_MESSAGES.https],
      });
    });
  });

  it('localhost as resolved by the system resolver is refused too (no allowance outside the local stack)', async () => {
    const m = await newMerchant();
    resetResolver();
    try {
      await withEnv(prod, async () => {
        expect422(await api.post('/webhook-endpoints', m.token, valid({ url: 'https://localhost/' })), { url: REFUSED });
      });
    } finally {
      setResolver(async (host) => {
        asked.push(host);
        const found = HOSTS[host];
        if (!found) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
        return found;
      });
    }
  });
});
