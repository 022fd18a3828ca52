import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { isolatedClock, withEnv } from './support.ts';
import {
  FORWARDED_FOR_HEADER,
  isFrontDoorSecret,
  ORIGIN_VERIFY_ENV,
  ORIGIN_VERIFY_HEADER,
  VIEWER_ADDRESS_HEADER,
  viewerAddressIp,
  viewerIpOf,
} from '#lib/http/front-door';

/**
 * The front door (docs/deployment-and-protection.md, *In front of the functions*): with a secret
 * configured, only requests CloudFront forwarded (they carry it) reach the route; without one
 * (`npm start`, every other test) nothing is checked.
 */
isolatedClock();
const api = useApi();

const SECRET = 'front-door-secret-0123456789abcdefghijklmnop';
const configured = <T>(fn: () => Promise<T>) => withEnv({ [ORIGIN_VERIFY_ENV]: SECRET }, fn);
const REFUSED = { message: 'This action is unauthorized.' };

const expectRefused = (r: ApiResponse, what: string) => {
  expect(r.status, what).toBe(403);
  expect(r.body, what).toEqual(REFUSED);
  expect(r.headers.get('content-type'), what).toBe('application/json');
  expect(r.headers.get('x-request-id'), what).toMatch(/^[0-9a-f-]{36}$/);
  // Refused before it is counted: no rate window, so no X-RateLimit-* headers.
  expect(r.headers.get('x-ratelimit-limit'), what).toBeNull();
};

describe('front door: a configured secret', () => {
  it('refuses a request without the header, or with a wrong one, with 403 and the API error body, on every kind of route', async () => {
    const { token } = await newMerchant();
    await configured(async () => {
      const wrong = [undefined, '', SECRET.slice(1), `${SECRET}x`, SECRET.toUpperCase(), 'x'.repeat(SECRET.length)];
      for (const value of wrong) {
        const headers: Record<string, string> = value === undefined ? {} : { [ORIGIN_VERIFY_HEADER]: value };
        expectRefused(await api.get('/customers', token, headers), `token route, header ${JSON.stringify(value)}`);
        expectRefused(await api.get('/openapi.json', null, headers), `public route, header ${JSON.stringify(value)}`);
        expectRefused(await api.get('/no-such-path', null, headers), `unknown path, header ${JSON.stringify(value)}`);
      }
      // A write is refused before anything is read or stored.
      expectRefused(await api.post('/customers', token, { email: 'bypass@example.com' }), 'write without the header');
    });
    expect((await api.get('/customers', token)).body.meta.total).toBe(0);
  });

  it('accepts the right header: the route answers as usual, counted, with its headers', async () => {
    const { token } = await newMerchant();
    await configured(async () => {
      const ok = await api.get('/customers', token, { [ORIGIN_VERIFY_HEADER]: SECRET });
      expect(ok.status).toBe(200);
      expect(ok.body.meta.total).toBe(0);
      expect(ok.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
      // Header names are case-insensitive, as everywhere in HTTP.
      expect((await api.get('/customers', token, { 'X-Origin-Verify': SECRET })).status).toBe(200);
      expect((await api.get('/openapi.json', null, { [ORIGIN_VERIFY_HEADER]: SECRET })).status).toBe(200);
      expect((await api.get('/no-such-path', null, { [ORIGIN_VERIFY_HEADER]: SECRET })).status).toBe(404);
    });
  });

  it('counts requests without a valid token per viewer IP (CloudFront-Viewer-Address), one window per viewer', async () => {
    const viewer = (n: number) => `198.51.100.${n}`;
    const base = randomInt(1, 200);
    await withEnv({ [ORIGIN_VERIFY_ENV]: SECRET, UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '2' }, async () => {
      const from = (ip: string, port = 40_000) =>
        api.get('/customers', null, { [ORIGIN_VERIFY_HEADER]: SECRET, [VIEWER_ADDRESS_HEADER]: `${ip}:${port}` });
      expect((await from(viewer(base))).status).toBe(401);
      expect((await from(viewer(base), 40_001)).status).toBe(401);
      const third = await from(viewer(base), 40_002);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({ message: 'Too Many Attempts.' });
      // Another viewer behind the same CloudFront edge has a window of its own.
      const other = await from(viewer(base + 1));
      expect(other.status).toBe(401);
      expect(other.headers.get('x-ratelimit-remaining')).toBe('1');
    });
  });
});

describe('front door: no secret configured (npm start, tests, a stack without the edge)', () => {
  it('checks nothing, and a CloudFront-Viewer-Address sent by the caller does not move it to another window', async () => {
    const { token } = await newMerchant();
    expect((await api.get('/customers', token)).status).toBe(200);
    expect((await api.get('/customers', token, { [ORIGIN_VERIFY_HEADER]: 'anything' })).status).toBe(200);
    await withEnv({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '2' }, async () => {
      const spoofed = (n: number) => api.get('/customers', null, { [VIEWER_ADDRESS_HEADER]: `203.0.113.${n}:443` });
      // The socket's address (127.0.0.1) is counted whatever the header says: its third request is over.
      const answers = [];
      for (let n = 1; n <= 3; n++) answers.push((await spoofed(n)).status);
      expect(answers.at(-1)).toBe(429);
    });
  });
});

describe('front door helpers', () => {
  it('compares the secret exactly', () => {
    expect(isFrontDoorSecret(SECRET, SECRET)).toBe(true);
    for (const other of [undefined, '', SECRET.slice(0, -1), `${SECRET} `]) expect(isFrontDoorSecret(other, SECRET)).toBe(false);
  });

  it('reads the viewer IP of CloudFront-Viewer-Address, IPv4 and IPv6, and nothing else', () => {
    expect(viewerAddressIp('198.51.100.10:46532')).toBe('198.51.100.10');
    expect(viewerAddressIp('2001:db8::1:46532')).toBe('2001:db8::1');
    expect(viewerAddressIp('[2001:db8::1]:46532')).toBe('2001:db8::1');
    for (const bad of [undefined, '', '198.51.100.10', 'host.example:443', ':443', 'a b:1'])
      expect(viewerAddressIp(bad), String(bad)).toBeUndefined();
  });

  it("without CloudFront-Viewer-Address, takes the X-Forwarded-For entry CloudFront appended, never the caller's own", () => {
    const edge = '130.176.0.1';
    const xff = (value: string) => ({ [FORWARDED_FOR_HEADER]: value });
    // CloudFront appends the viewer; API Gateway may append the edge server it was connected from.
    expect(viewerIpOf(xff('198.51.100.7'), edge)).toBe('198.51.100.7');
    expect(viewerIpOf(xff(`198.51.100.7, ${edge}`), edge)).toBe('198.51.100.7');
    // Entries the caller sent itself come first and are ignored.
    expect(viewerIpOf(xff(`10.0.0.1, 203.0.113.5, 198.51.100.7, ${edge}`), edge)).toBe('198.51.100.7');
    expect(viewerIpOf({ ...xff(`198.51.100.7, ${edge}`), [VIEWER_ADDRESS_HEADER]: '198.51.100.8:1234' }, edge)).toBe('198.51.100.8');
    for (const headers of [{}, xff(''), xff('not-an-ip')]) expect(viewerIpOf(headers, edge)).toBeUndefined();
  });
});
