import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkUrlShape,
  checkWebhookUrl,
  guardedLookup,
  isPublicAddress,
  refusedAddressClass,
  URL_MESSAGES,
  type Resolver,
} from '#lib/webhooks/url-safety';

/**
 * SSRF rules of webhook URLs (docs/webhook-endpoints.md), as unit tests of the check with an injected resolver:
 * every refused address class as an IPv4 and IPv6 literal and as a host name resolving to it,
 * public addresses allowed, the local stack's loopback allowance, and the URL shape rules.
 */

/** A resolver answering from a table; unknown names fail like DNS (ENOTFOUND). */
const table = (entries: Record<string, string[]>): Resolver & { asked: string[] } => {
  const asked: string[] = [];
  const r = async (host: string) => {
    asked.push(host);
    const found = entries[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(r, { asked });
};

const prod = { allowLocal: false };
const local = { allowLocal: true };

/** Every refused class, with IPv4 and IPv6 examples (IPv4-mapped forms included). */
const REFUSED: [string, string[]][] = [
  ['unspecified', ['0.0.0.0', '0.1.2.3', '::', '::ffff:0.0.0.0']],
  ['loopback', ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::7f00:1']],
  [
    'private',
    [
      '10.0.0.1',
      '10.255.255.255',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '192.168.255.255',
      'fc00::1',
      'fd12:3456:789a::1',
      '::ffff:10.0.0.1',
      '::ffff:192.168.1.1',
      '::ffff:ac10:1',
      '64:ff9b:1::a00:1',
    ],
  ],
  ['shared (CGNAT)', ['100.64.0.1', '100.127.255.254', '::ffff:100.64.0.1']],
  ['link-local', ['169.254.169.254', '169.254.0.1', 'fe80::1', 'febf:ffff::1', 'fec0::1', '::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe']],
  ['multicast', ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff05::1:3', '::ffff:224.0.0.251']],
  ['broadcast', ['255.255.255.255', '::ffff:255.255.255.255']],
  ['reserved', ['240.0.0.1', '100::1', '5f00::1']],
  ['documentation', ['192.0.2.1', '198.51.100.7', '203.0.113.9', '2001:db8::1', '3fff::1']],
  ['benchmarking', ['198.18.0.1', '198.19.255.255']],
  ['protocol assignment', ['192.0.0.8', '2001:2::1']],
  ['transition (6to4, Teredo)', ['192.88.99.1', '2002:a00:1::1', '2001:0:4136:e378::1']],
  ['not global unicast', ['::2', '4000::1', '::a00:1', '1234::1']],
];

const PUBLIC = [
  '93.184.215.14',
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '172.15.255.255',
  '100.128.0.1',
  '192.169.0.1',
  '11.0.0.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
];

describe('refusedAddressClass (the address check the delivery reuses)', () => {
  it.each(REFUSED)('%s addresses are refused, each named by its class', (cls, addresses) => {
    for (const address of addresses) {
      expect(refusedAddressClass(address), address).toBe(cls);
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it('public IPv4 and IPv6 addresses (and their IPv4-mapped / NAT64 forms) pass', () => {
    for (const address of PUBLIC) expect(refusedAddressClass(address), address).toBeNull();
  });

  it('brackets and zone ids do not hide an address; anything that is not an IP is refused', () => {
    expect(refusedAddressClass('[::1]')).toBe('loopback');
    expect(refusedAddressClass('fe80::1%eth0')).toBe('link-local');
    expect(refusedAddressClass('[fe80::1%25eth0]')).toBe('link-local');
    for (const junk of ['', 'localhost', '10.0.0', '1.2.3.4.5', '::g', 'example.com'])
      expect(refusedAddressClass(junk), junk).toBe('not an IP address');
  });
});

describe('checkWebhookUrl: addresses', () => {
  it.each(REFUSED)(
    '%s: refused as a literal in the URL and as a host name resolving to it, in production and locally',
    async (cls, addresses) => {
      for (const address of addresses) {
        const literal = address.includes(':') ? `https://[${address}]/hook` : `https://${address}/hook`;
        const resolver = table({ 'hooks.example.com': [address] });
        for (const opts of [prod, local]) {
          const byLiteral = await checkWebhookUrl(literal, { ...opts, resolver });
          // Locally, the exact loopback literals are allowed (below); every other address is still refused.
          if (opts.allowLocal && (address === '127.0.0.1' || address === '::1')) continue;
          expect(byLiteral, `${literal} ${JSON.stringify(opts)}`).toEqual({ ok: false, message: URL_MESSAGES.refused, refused: cls });
          const byName = await checkWebhookUrl('https://hooks.example.com/hook', { ...opts, resolver });
          expect(byName, `hooks.example.com → ${address} ${JSON.stringify(opts)}`).toEqual({
            ok: false,
            message: URL_MESSAGES.refused,
            refused: cls,
          });
        }
        // A literal is never sent to the resolver.
        expect(resolver.asked.every((h) => h === 'hooks.example.com')).toBe(true);
      }
    },
  );

  it('169.254.169.254 (instance metadata) is refused however it is written', async () => {
    const resolver = table({});
    for (const url of [
      'https://169.254.169.254/latest/meta-data/',
      'https://0xa9fea9fe/',
      'https://2852039166/',
      'https://0251.0376.0251.0376/',
      'https://169.254.43518/',
      'https://[::ffff:169.254.169.254]/',
      'https://[::ffff:a9fe:a9fe]/',
    ]) {
      expect(await checkWebhookUrl(url, { ...prod, resolver }), url).toMatchObject({ ok: false, refused: 'link-local' });
    }
    expect(resolver.asked).toEqual([]);
  });

  it('a host name is refused when ANY of its addresses is refused (a public A record beside a private AAAA)', async () => {
    const resolver = table({
      'mixed.example.com': ['93.184.215.14', 'fd00::1'],
      'mixed4.example.com': ['8.8.8.8', '10.1.2.3'],
      'ok.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
    expect(await checkWebhookUrl('https://mixed.example.com/', { ...prod, resolver })).toMatchObject({ ok: false, refused: 'private' });
    expect(await checkWebhookUrl('https://mixed4.example.com/', { ...prod, resolver })).toMatchObject({ ok: false, refused: 'private' });
    const ok = await checkWebhookUrl('https://ok.example.com/', { ...prod, resolver });
    expect(ok).toMatchObject({ ok: true, addresses: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
  });

  it('public addresses pass, as literals and by name; the result carries the checked addresses', async () => {
    for (const address of PUBLIC) {
      const literal = address.includes(':') ? `https://[${address}]/h` : `https://${address}/h`;
      expect(await checkWebhookUrl(literal, { ...prod, resolver: table({}) }), literal).toMatchObject({ ok: true });
      const byName = await checkWebhookUrl('https://hooks.example.com/h?x=1', {
        ...prod,
        resolver: table({ 'hooks.example.com': [address] }),
      });
      expect(byName, address).toMatchObject({ ok: true, addresses: [address] });
    }
  });

  it('a name that does not resolve (or resolves to nothing) is refused', async () => {
    const resolver = table({ 'empty.example.com': [] });
    for (const url of ['https://nowhere.example.com/', 'https://empty.example.com/']) {
      expect(await checkWebhookUrl(url, { ...prod, resolver }), url).toEqual({ ok: false, message: URL_MESSAGES.unresolvable });
    }
  });

  it('the name given to the resolver is the normalised host (lower case, punycode, no trailing dot removal)', async () => {
    const resolver = table({
      'xn--e1afmkfd.xn--p1ai': ['93.184.215.14'],
      'hooks.example.com': ['93.184.215.14'],
      'localhost.': ['127.0.0.1'],
    });
    expect(await checkWebhookUrl('https://пример.рф/', { ...prod, resolver })).toMatchObject({ ok: true });
    expect(await checkWebhookUrl('https://HOOKS.Example.COM/', { ...prod, resolver })).toMatchObject({ ok: true });
    // Not exactly "localhost": resolved and checked like any name, even locally.
    expect(await checkWebhookUrl('http://localhost./', { ...local, resolver })).toEqual({ ok: false, message: URL_MESSAGES.httpsLocal });
    expect(await checkWebhookUrl('https://localhost./', { ...local, resolver })).toMatchObject({ ok: false, refused: 'loopback' });
    expect(resolver.asked).toEqual(['xn--e1afmkfd.xn--p1ai', 'hooks.example.com', 'localhost.']);
  });
});

describe('checkWebhookUrl: shape, production and local stack', () => {
  const resolver = table({ 'hooks.example.com': ['93.184.215.14'], localhost: ['127.0.0.1', '::1'] });

  it('production: https only; http is refused even to a public host or localhost', async () => {
    expect(await checkWebhookUrl('https://hooks.example.com/x', { ...prod, resolver })).toMatchObject({ ok: true });
    for (const url of ['http://hooks.example.com/x', 'http://localhost:3000/x', 'http://127.0.0.1/x', 'http://[::1]/x']) {
      expect(await checkWebhookUrl(url, { ...prod, resolver }), url).toEqual({ ok: false, message: URL_MESSAGES.https });
    }
    // And https to loopback is an address refusal.
    for (const url of ['https://localhost/x', 'https://127.0.0.1/x', 'https://[::1]/x']) {
      expect(await checkWebhookUrl(url, { ...prod, resolver }), url).toMatchObject({ ok: false, refused: 'loopback' });
    }
  });

  it('only port 443 (written or not), in production and locally; loopback in the local stack on any port', async () => {
    for (const opts of [prod, local]) {
      for (const url of ['https://hooks.example.com:443/x', 'https://hooks.example.com/x']) {
        expect(await checkWebhookUrl(url, { ...opts, resolver }), url).toMatchObject({ ok: true });
      }
      for (const url of [
        'https://hooks.example.com:8443/x',
        'https://hooks.example.com:80/',
        'https://93.184.215.14:22/',
        'https://hooks.example.com:1/',
      ]) {
        expect(await checkWebhookUrl(url, { ...opts, resolver }), url).toEqual({ ok: false, message: URL_MESSAGES.port });
      }
    }
    expect(await checkWebhookUrl('https://localhost:8443/x', { ...local, resolver })).toMatchObject({ ok: true });
  });

  it('local stack: exactly localhost, 127.0.0.1 and [::1] are allowed over http or https, unresolved', async () => {
    const r = table({});
    for (const url of [
      'http://localhost:4000/hooks',
      'https://localhost/hooks',
      'http://LOCALHOST:4000/',
      'http://127.0.0.1:4000/hooks',
      'https://127.0.0.1/',
      'http://127.1:4000/', // the same address, normalised by the URL parser
      'http://[::1]:4000/hooks',
      'https://[0:0:0:0:0:0:0:1]/',
    ]) {
      expect(await checkWebhookUrl(url, { ...local, resolver: r }), url).toMatchObject({ ok: true });
    }
    expect(r.asked).toEqual([]);
  });

  it('local stack: every other private or loopback address is still refused, and http to anything else too', async () => {
    const r = table({ 'intranet.example.com': ['192.168.1.10'], 'hooks.example.com': ['93.184.215.14'] });
    for (const [url, expected] of [
      ['https://127.0.0.2/', { refused: 'loopback' }],
      ['https://10.0.0.1/', { refused: 'private' }],
      ['https://169.254.169.254/', { refused: 'link-local' }],
      ['https://[fe80::1]/', { refused: 'link-local' }],
      ['https://[::ffff:127.0.0.1]/', { refused: 'loopback' }],
      ['https://intranet.example.com/', { refused: 'private' }],
      ['http://10.0.0.1/', { message: URL_MESSAGES.httpsLocal }],
      ['http://hooks.example.com/', { message: URL_MESSAGES.httpsLocal }],
      ['http://127.0.0.2/', { message: URL_MESSAGES.httpsLocal }],
    ] as const) {
      expect(await checkWebhookUrl(url, { ...local, resolver: r }), url).toMatchObject({ ok: false, ...expected });
    }
    expect(await checkWebhookUrl('https://hooks.example.com/', { ...local, resolver: r })).toMatchObject({ ok: true });
  });

  it('refuses what is not an http(s) URL, and user info', () => {
    for (const [raw, message] of [
      ['not a url', URL_MESSAGES.invalid],
      ['hooks.example.com/x', URL_MESSAGES.invalid],
      ['/relative', URL_MESSAGES.invalid],
      ['ftp://hooks.example.com/', URL_MESSAGES.invalid],
      ['file:///etc/passwd', URL_MESSAGES.invalid],
      ['javascript:alert(1)', URL_MESSAGES.invalid],
      ['gopher://hooks.example.com/', URL_MESSAGES.invalid],
      ['https://', URL_MESSAGES.invalid],
      ['https://exa mple.com/', URL_MESSAGES.invalid],
      ['https://user@hooks.example.com/', URL_MESSAGES.userinfo],
      ['https://user:pass@hooks.example.com/', URL_MESSAGES.userinfo],
      ['https://:pass@hooks.example.com/', URL_MESSAGES.userinfo],
      ['http://user:pass@localhost/', URL_MESSAGES.userinfo],
    ] as const) {
      for (const allowLocal of [false, true]) {
        const r = checkUrlShape(raw, { allowLocal });
        if (raw.startsWith('http://user') && !allowLocal) expect(r, raw).toEqual({ ok: false, message: URL_MESSAGES.https });
        else expect(r, `${raw} local=${allowLocal}`).toEqual({ ok: false, message });
      }
    }
  });
});

describe('guardedLookup (for the delivery: the address connected to is the address checked)', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('reached'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const get = (host: string, lookup: ReturnType<typeof guardedLookup>) =>
    new Promise<{ ok: true; body: string } | { ok: false; code: string; message: string }>((resolve) => {
      const req = request({ host, port, path: '/', lookup: lookup as never }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ ok: true, body }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, code: String(err.code), message: err.message }));
      req.end();
    });

  it('a name that now resolves to a refused address fails the connection before it is made', async () => {
    const rebound = table({ 'rebind.example.com': ['127.0.0.1'] });
    const r = await get('rebind.example.com', guardedLookup({ allowLocal: false, resolver: rebound }));
    expect(r).toMatchObject({ ok: false, code: 'EWEBHOOKADDR' });
    expect((r as { message: string }).message).toContain('loopback');
    expect(rebound.asked).toEqual(['rebind.example.com']);
  });

  it('locally, localhost connects (the loopback allowance)', async () => {
    expect(await get('localhost', guardedLookup({ allowLocal: true, resolver: table({}) }))).toEqual({ ok: true, body: 'reached' });
  });
});
