import { INVALID_DATA } from '#lib/errors';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { keys } from '#lib/db/keys';
import { authKindOf } from '#lib/http/route';
import { routeList } from '#lib/api/routes';
import { resetResolver, setResolver } from '#lib/webhooks/url-safety';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { observeWrites } from '../support/faults.ts';
import { assertWithinBudget } from '../support/property.ts';
import { merchantSnapshot, SAMPLE_BODIES, snapshotDiff } from './support.ts';

/**
 * Bad input: fast-check path segments, query strings, headers and bodies for every route
 * of the route table (a new route is fuzzed without touching this file; a write route without a
 * sample body below is fuzzed from `{}`). Every answer is below 500; a 4xx is one of docs/api-conventions.md's
 * with its documented body, and a refused request stores nothing (the merchant's items are read
 * before and after each case: `merchantSnapshot`). Each route gets its own table (TABLE_NAME is read
 * per call), so that read stays small. FUZZ_RUNS (write routes, default 100;
 * 500 or more for a deeper search before a release), FUZZ_READ_RUNS (reads,
 * default 50) and FUZZ_BUDGET_MS (per route) raise or bound the search; running out of time fails.
 *
 * Back-office routes are left out: they read no path, query or body, only the JWT authorizer's
 * claims (forged identities: test/backoffice/roles.test.ts); fuzzing regenerate/revoke would only
 * replace the token under test.
 */
process.env.RATE_LIMIT_PER_HOUR = '100000000';
const api = useApi();

const WRITE_RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const READ_RUNS = Number(process.env.FUZZ_READ_RUNS ?? 50);
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 240_000);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

beforeAll(() =>
  // No DNS here: any host but the local stack's localhost is "does not resolve" (a 422 on url).
  setResolver(async (host) => {
    throw new Error(`no DNS in the fuzz (${host})`);
  }),
);
afterAll(() => resetResolver());

/* ---------------------------------------------------------------------------------------------- */
/* Hostile values                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

const HUGE = 'h'.repeat(1_000_000); // 1 MB: under the 1 MiB body limit with the JSON around it
const LONG = 'L'.repeat(8_000); // API Gateway takes 10,240 bytes of request line and headers
/** JSON texts JSON.stringify cannot write: spliced into bodies in place of their markers. */
const RAW = [
  '1e309',
  '-1e309',
  '-0',
  '1e-400',
  '123456789012345678901234567890',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`,
];
const rawMarker = (i: number) => `@@RAW${i}@@`;
const spliceRaw = (json: string) => json.replace(/"@@RAW(\d+)@@"/g, (_m, i) => RAW[Number(i)]);

/** Any UTF-16 code unit, lone surrogates and NUL included. */
const codeUnits = (maxLength: number) => fc.string({ unit: fc.nat({ max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength });
const AWKWARD = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  'null',
  'true',
  '0x10',
  '1,5',
  '١٢٣',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\u202e',
  '💥',
  'ß'.repeat(300),
  LONG,
  HUGE,
  '../..',
  '%00',
  "' OR 1=1 --",
  '2025-02-30',
  '9999-99-99T99:99:99Z',
  '-1',
  '0',
  '2147483648',
  '9007199254740993',
];

const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: fc.constantFrom(...AWKWARD) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW.map((_, i) => rawMarker(i))) },
  { weight: 2, arbitrary: codeUnits(40) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({})) },
);

/** Every path to a value inside `v` (`[]` is the whole), for nested mutations (batch items, metadata). */
const pathsOf = (v: unknown, at: (string | number)[] = []): (string | number)[][] =>
  v && typeof v === 'object' ? [at, ...Object.entries(v).flatMap(([k, x]) => pathsOf(x, [...at, Array.isArray(v) ? Number(k) : k]))] : [at];

const setAt = (root: unknown, path: (string | number)[], value: unknown, drop: boolean): unknown => {
  if (path.length === 0) return value;
  const copy: any = structuredClone(root);
  let node = copy;
  for (const k of path.slice(0, -1)) node = node?.[k];
  // An earlier mutation replaced a parent with a scalar: nothing to set inside it.
  if (!node || typeof node !== 'object') return copy;
  const last = path.at(-1)!;
  if (drop && !Array.isArray(node)) delete node[last];
  else node[last] = value;
  return copy;
};

/** Request bodies: the route's sample with fields replaced, dropped or added; random JSON; raw text. */
const bodies = (sample: Record<string, unknown>, schema: z.ZodType) => {
  const shapeKeys = Object.keys((schema as unknown as { shape?: object }).shape ?? {});
  const paths = [
    ...pathsOf(sample).filter((p) => p.length > 0),
    ...shapeKeys.map((k) => [k]),
    ['unknown_field'],
    ['__proto__'],
    ['constructor'],
  ];
  const mutation = fc.record({ path: fc.constantFrom(...paths), value: hostileJson, drop: fc.boolean() });
  const text = (v: unknown) => spliceRaw(JSON.stringify(v) ?? 'null');
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .array(mutation, { minLength: 1, maxLength: 3 })
        .map((ms) => text(ms.reduce<unknown>((b, m) => setAt(b, m.path, m.value, m.drop && m.path.length > 0), sample))),
    },
    { weight: 2, arbitrary: hostileJson.map(text) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        '{',
        '{"a":1',
        '{"a":1}{"b":2}',
        '\ufeff{}',
        '[]',
        '"x"',
        'nul',
        '{"email":"\u0000"}',
        `{"a":"${'y'.repeat(1024 * 1024)}"}`,
        ...RAW,
      ),
    },
  );
};

/** Percent-encodes any string, a lone surrogate as the bytes of its WTF-8 form (invalid UTF-8). */
const encodeLoose = (s: string): string => {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    if (pair) out += encodeURIComponent(s.slice(i, ++i + 1));
    else if (c >= 0xd800 && c <= 0xdfff)
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    else out += encodeURIComponent(s[i]);
  }
  return out;
};
/** Sent as written: malformed escapes. */
const RAW_SEGMENTS = ['%', '%zz', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%00', '%2F', '..%2F..'];
const shortValues = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...AWKWARD.filter((v) => v !== HUGE)).map(encodeLoose) },
  {
    weight: 2,
    arbitrary: codeUnits(30)
      .filter((s) => s.length > 0)
      .map(encodeLoose),
  },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
  { weight: 1, arbitrary: fc.integer().map(String) },
);

/** Header values fetch can send (visible ASCII and spaces: no NUL, CR or LF — nor can API Gateway pass them). */
const headerValues = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  fc.constantFrom('', LONG, 'NaN', '-0', '1e309'),
);

/* ---------------------------------------------------------------------------------------------- */
/* Routes: valid samples (the fuzz mutates them) and the seeded resources path params point at    */
/* ---------------------------------------------------------------------------------------------- */

/** Path parameters naming the seeded resources (the fuzz also sends hostile ones). */
const VALID_PARAMS: Record<string, string[]> = { idOrExternalId: ['1', 'ext-1'], orderNo: ['FZ-1'], id: ['1'], event_id: ['evt_unknown'] };

/** A customer (id 1, external_id ext-1), an order FZ-1, a subscription 1 and a webhook endpoint 1. */
const seed = async (token: string) => {
  const ok = (r: ApiResponse) => expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  ok(await api.post('/customers', token, { email: 'fz@fuzz.test', external_id: 'ext-1' }));
  ok(await api.post('/orders', token, { order_no: 'FZ-1', amount: '5.00', customer_email: 'fz@fuzz.test' }));
  ok(await api.post('/subscriptions', token, { customer_id: 1, plan_name: 'P', mrr: '10.00', billing_cycle: 'monthly' }));
  ok(await api.post('/webhook-endpoints', token, { url: 'http://localhost:9/hook', events: ['*'] }));
};

const ERROR_BODIES: Record<number, unknown> = {
  400: { message: 'The request body is not valid JSON.' },
  404: { message: 'Resource not found' },
  413: { message: 'The request body is too large.' },
};

/** A 4xx from docs/api-conventions.md's table with its documented body (or 409 `{message}`), and the common headers. */
const expectDocumented = (r: ApiResponse, label: string) => {
  expect(r.status, label).toBeLessThan(500);
  expect(r.headers.get('content-type'), label).toBe('application/json');
  expect(r.headers.get('x-request-id'), label).toBeTruthy();
  if (r.status < 400) return;
  expect([400, 404, 409, 413, 422], label).toContain(r.status);
  if (r.status === 422) {
    expect(Object.keys(r.body).sort(), label).toEqual(['errors', 'message']);
    expect(r.body.message, label).toBe(INVALID_DATA);
    const fields = Object.entries(r.body.errors as Record<string, unknown>);
    expect(fields.length, label).toBeGreaterThan(0);
    for (const [, messages] of fields) {
      expect(Array.isArray(messages) && messages.length > 0 && messages.every((m) => typeof m === 'string' && m.length > 0), label).toBe(
        true,
      );
    }
  } else if (r.status === 409) {
    expect(Object.keys(r.body), label).toEqual(['message']);
    expect(typeof r.body.message, label).toBe('string');
  } else expect(r.body, label).toEqual(ERROR_BODIES[r.status]);
};

const fuzzed = routeList.filter((r) => authKindOf(r) !== 'backoffice');
const figures: string[] = [];
afterAll(() => console.info(`[fuzz] route | cases | snapshots compared | answers\n${figures.join('\n')}`));

describe('bad input on every route: a documented 4xx, never a 5xx, nothing stored when refused', () => {
  it.each(fuzzed.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', { timeout: BUDGET_MS + 120_000 }, async (label, route) => {
    process.env.TABLE_NAME = `fuzz-${route.name}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, process.env.TABLE_NAME);
    const { merchantId, token } = await newMerchant();
    await seed(token);

    const paramNames = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    const queryKeys = Object.keys(route.request?.query?.shape ?? {});
    const headerKeys = Object.keys(route.request?.headers?.shape ?? {});
    const bodySchema = route.request?.body;
    const body = bodySchema ? bodies(SAMPLE_BODIES[route.name] ?? {}, bodySchema) : fc.constant(undefined);
    const param = (name: string) =>
      fc.oneof(
        { weight: 1, arbitrary: fc.constantFrom(...(VALID_PARAMS[name] ?? ['1'])).map(encodeURIComponent) },
        { weight: 2, arbitrary: shortValues },
      );
    const caseArb = fc.record({
      params: fc.tuple(...paramNames.map(param)),
      // Duplicate names on purpose: API Gateway joins them with commas.
      query: fc.array(fc.tuple(fc.constantFrom(...queryKeys, 'junk', 'page'), shortValues), { maxLength: 5 }),
      headers: fc.array(fc.tuple(fc.constantFrom(...headerKeys, 'x-fuzz', 'content-type'), headerValues), { maxLength: 3 }),
      body,
    });

    // API Gateway takes 10,240 bytes of request line and headers; larger heads never reach a function.
    const headBytes = (c: { params: string[]; query: [string, string][]; headers: [string, string][] }) =>
      route.path.length +
      c.params.join('').length +
      c.query.reduce((n, [k, v]) => n + k.length + v.length + 2, 0) +
      c.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
    const cases$ = caseArb.filter((c) => headBytes(c) < 9_000);
    const statuses: Record<number, number> = {};
    let cases = 0;
    // Ids are allocated by one ADD before the write's transaction (docs/architecture.md: Table design), so a request
    // that passes validation and then loses at its conditional write (email taken, a live subscription
    // exists: 422; the 20-endpoint cap: 409) leaves a gap in the sequence; nothing else may change.
    const sequenceItem = `${keys.sequences(merchantId).pk} | ${keys.sequences(merchantId).sk}`;
    let before = await merchantSnapshot(merchantId);
    const ownPartition = keys.merchant(merchantId).pk;
    let scans = 0;
    const writes = observeWrites();
    await assertWithinBudget(
      fc.asyncProperty(cases$, async (c) => {
        cases++;
        let i = 0;
        const path = route.path.replace(/\{\w+\}/g, () => c.params[i++]);
        const query = c.query.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
        const headers: Record<string, string> = {};
        for (const [k, v] of c.headers) headers[k] = v;
        const sent = `${route.method} ${path}?${query.slice(0, 200)} headers ${JSON.stringify(headers).slice(0, 200)}`;
        const r = await api
          .request(route.method, `${path}${query ? `?${query}` : ''}`, { token, headers, rawBody: c.body })
          .catch((err: Error) => {
            throw new Error(`${sent}: no answer (${err.message}; ${String((err.cause as Error | undefined)?.message)})`);
          });
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        const what = `${label}: ${route.method} ${path}?${query.slice(0, 200)} body ${String(c.body).slice(0, 300)} → ${r.status} ${String(JSON.stringify(r.body)).slice(0, 300)}`;
        if (process.env.FUZZ_DEBUG)
          console.info(
            `[case] ${route.method} ${path}?${query.slice(0, 100)} → ${r.status} ${JSON.stringify([...(r.headers as unknown as Iterable<[string, string]>)])}`,
          );
        // Only a request that sent a write to the merchant's own items can have stored anything: read
        // the snapshot again then (the Scan is the judge); otherwise the last one still holds.
        const wroteData = writes.stats.partitions.some((p) => p === ownPartition || p.startsWith(`${ownPartition}#`));
        writes.stats.partitions.length = 0;
        if (!wroteData) {
          expectDocumented(r, what);
          return;
        }
        scans++;
        const after = await merchantSnapshot(merchantId);
        const stored = snapshotDiff(before, after).filter((k) => !((r.status === 422 || r.status === 409) && k === `~${sequenceItem}`));
        before = after;
        expectDocumented(r, what);
        if (r.status >= 400) expect(stored, `stored by a refused request: ${what}`).toEqual([]);
      }),
      route.writes ? WRITE_RUNS : READ_RUNS,
      BUDGET_MS,
      SEED,
    ).finally(() => writes.uninstall());
    // Once more at the end: nothing may have changed since the last write the observer saw.
    expect(snapshotDiff(before, await merchantSnapshot(merchantId)), `${label}: a change no observed write explains`).toEqual([]);
    figures.push(`${label} | ${cases} | ${scans} | ${JSON.stringify(statuses)}`);
  });
});
