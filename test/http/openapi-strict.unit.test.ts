import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import type * as z from 'zod';
import { CREATE_LINKS, openApiDocument } from '#lib/api/openapi';
import { routeList } from '#lib/api/routes';
import { isCurrency } from '#lib/shared/currency';
import { checkPageOffset } from '#lib/shared/pagination';

/**
 * The OpenAPI document is as strict as the server: for each (operation, field, value) the server
 * refuses, the document's schema of that field refuses it too, and what the server accepts the
 * document accepts. Checked with Ajv's draft 2020-12 (OpenAPI 3.1's dialect, standard formats), the
 * validator a client's tooling would use; the server's side is the route's own zod schema.
 */
const doc = JSON.parse(JSON.stringify(openApiDocument()));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(doc, 'doc');
// Query and path parameters arrive as strings: typed ones are read as their type.
const ajvParams = new Ajv2020({ strict: false, coerceTypes: true });
addFormats.default(ajvParams);
ajvParams.addSchema(doc, 'doc');

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const routeOf = (op: string) => {
  const [method, path] = op.split(' ');
  const route = routeList.find((r) => r.method === method && r.path === path);
  if (!route) throw new Error(`no route ${op}`);
  return route;
};

const parameterValidators = new Map<string, ValidateFunction>();

/** The document's verdict on a body (`body`) or a parameter's value. */
const documentAccepts = (op: string, where: 'body' | 'query' | 'path', name: string, value: unknown): boolean => {
  const [method, path] = op.split(' ');
  const operation = doc.paths[path][method.toLowerCase()];
  if (where === 'body') {
    return ajv.validate(
      { $ref: `doc#/${pointer('paths', path, method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema')}` },
      value,
    );
  }
  const i = operation.parameters.findIndex((p: { in: string; name: string }) => p.in === where && p.name === name);
  expect(i, `${op} documents ${where} parameter ${name}`).toBeGreaterThanOrEqual(0);
  const key = `${op} ${where} ${name}`;
  let validate = parameterValidators.get(key);
  if (!validate) {
    validate = ajvParams.compile({
      type: 'object',
      properties: { v: { $ref: `doc#/${pointer('paths', path, method.toLowerCase(), 'parameters', String(i), 'schema')}` } },
    });
    parameterValidators.set(key, validate);
  }
  return validate({ v: value });
};

/** The server's verdict: the route's zod schema, and for pages the offset rule the list applies next. */
const serverAccepts = (op: string, where: 'body' | 'query' | 'path', name: string, value: unknown, others = {}): boolean => {
  const request = routeOf(op).request!;
  const schema = (where === 'body' ? request.body : where === 'query' ? request.query : request.params) as z.ZodType;
  const parsed = schema.safeParse(where === 'body' ? value : { ...others, [name]: value });
  if (!parsed.success) return false;
  const out = parsed.data as { page?: number; per_page?: number };
  if (where === 'query' && out.page !== undefined && out.per_page !== undefined) {
    try {
      checkPageOffset(out.page, out.per_page);
    } catch {
      return false;
    }
  }
  return true;
};

/** `base`: the rest of a body, or (parameters) the other parameters sent beside the field. */
type Case = {
  op: string;
  where: 'body' | 'query' | 'path';
  field: string;
  base?: Record<string, unknown>;
  accepted: unknown[];
  refused: unknown[];
};

const order = { order_no: 'A-1', amount: '10.00', customer_email: 'a@example.com' };
const customer = { email: 'c@example.com' };
const endpoint = { url: 'https://example.com/hooks', events: ['order.paid'] };
const subscription = { customer_id: 1, plan_name: 'Pro', mrr: '10.00', billing_cycle: 'monthly' };
const rates = (r: Record<string, unknown>) => ({ rates: [{ month: '2026-01', rate: '31.5', ...r }] });

const IMPOSSIBLE_DATE_TIMES = [
  '2026-13-01T00:00:00Z',
  '2026-00-10T00:00:00Z',
  '2026-02-29T00:00:00Z',
  '2026-02-30T00:00Z',
  '2026-04-31T10:00Z',
  '1900-02-29T00:00Z',
  '2026-01-32T00:00Z',
  '2026-01-01T24:00Z',
  '2026-01-01T00:60Z',
  '2026-01-01T00:00:60Z',
  '2026-01-01T00:00+24:00',
  '2026-01-01T00:00+23:60',
  '2026-01-01T00:00:00',
];

const CASES: Case[] = [
  {
    op: 'POST /orders',
    where: 'body',
    field: 'amount',
    base: order,
    accepted: ['1200', ' 19.9 ', '0', 0.1, 9_999_999_999_999.99, '9999999999999.99'],
    refused: ['-1', -5, '1.234', '12345678901234', '1e3', 1e13, 99_999_999_999_999, '', 'ten', null, true],
  },
  {
    op: 'POST /orders',
    where: 'body',
    field: 'currency',
    base: order,
    accepted: ['USD', 'usd', 'Twd'],
    refused: ['XYZ', 'US', 'USDD', 'U$D', ''],
  },
  {
    op: 'POST /orders',
    where: 'body',
    field: 'paid_at',
    base: order,
    accepted: ['2024-02-29T12:00Z', '2026-01-01T00:00:00.5+08:00'],
    refused: IMPOSSIBLE_DATE_TIMES,
  },
  {
    op: 'POST /subscriptions',
    where: 'body',
    field: 'mrr',
    base: subscription,
    accepted: ['0.01', 5, ' 10 '],
    refused: ['0', '0.00', 0, -1, '1.001'],
  },
  {
    op: 'POST /subscriptions',
    where: 'body',
    field: 'started_at',
    base: subscription,
    accepted: ['2000-02-29T00:00Z'],
    refused: IMPOSSIBLE_DATE_TIMES,
  },
  {
    op: 'POST /customers',
    where: 'body',
    field: 'name',
    base: customer,
    accepted: ['Ann Lee', '陳小明', 'Zoë 👋', null],
    refused: ['a\u0000b', 'line\nbreak', 'tab\there', 'x\u007f', 'x\u0085', 'lone \ud800 surrogate', 'x'.repeat(256)],
  },
  {
    op: 'POST /customers',
    where: 'body',
    field: 'phone',
    base: customer,
    accepted: ['+886 912 345 678'],
    refused: ['0912\r\n', '\udc00', '1'.repeat(51)],
  },
  {
    op: 'GET /orders',
    where: 'query',
    field: 'start_date',
    accepted: ['2024-02-29', '2026-01-31T10:00Z'],
    refused: ['2026-13-45', '2026-02-29', '0000-01-01', '2026-1-1', ...IMPOSSIBLE_DATE_TIMES],
  },
  {
    op: 'GET /metrics/mrr',
    where: 'query',
    field: 'end_date',
    accepted: ['2024-02-29'],
    refused: ['2026-13-45', '2026-02-29', '2026-06-31'],
  },
  {
    op: 'GET /metrics/cohorts',
    where: 'query',
    field: 'start_month',
    accepted: ['2026-01', '0001-12'],
    refused: ['2026-13', '2026-00', '0000-01', '2026-1', '202601'],
  },
  { op: 'GET /orders/stats', where: 'query', field: 'currency', accepted: ['JPY', 'jpy'], refused: ['ABC', 'jp'] },
  { op: 'PUT /exchange-rates/{currency}', where: 'path', field: 'currency', accepted: ['USD', 'eur'], refused: ['XXY', 'EURO'] },
  {
    op: 'PUT /exchange-rates/{currency}',
    where: 'body',
    field: 'rates.0.month',
    accepted: ['1970-01', '2099-12'].map((month) => rates({ month })),
    refused: ['1969-12', '2100-01', '2026-13', '2026-00', '2026-1'].map((month) => rates({ month })),
  },
  {
    op: 'PUT /exchange-rates/{currency}',
    where: 'body',
    field: 'rates.0.rate',
    accepted: ['31.5', ' 0.0000000001 ', 0.5, 0.000001, 999_999_999_999, null].map((rate) => rates({ rate })),
    refused: ['0', '0.000', '-1', '1.12345678901', '1234567890123', 0, -2, 1e12, 1e-7, 'abc'].map((rate) => rates({ rate })),
  },
  {
    op: 'POST /webhook-endpoints',
    where: 'body',
    field: 'events',
    base: endpoint,
    accepted: [['*'], ['order.paid'], ['order.paid', 'subscription.cancelled']],
    refused: [['*', 'order.paid'], ['order.paid', '*'], ['nope'], [], ['*', 'nope'], [1]],
  },
  {
    op: 'PATCH /webhook-endpoints/{id}',
    where: 'body',
    field: 'events',
    accepted: [{ events: ['*'] }, {}],
    refused: [{ events: ['*', 'order.created'] }],
  },
  // Page numbers reach offsets below 10,000: per_page is at least 1, so no page past 10,000 is ever served.
  {
    op: 'GET /customers',
    where: 'query',
    field: 'page',
    base: { per_page: '1' },
    accepted: ['1', '10000'],
    refused: ['0', '10001', '2147483647', '-1', '1.5'],
  },
  { op: 'GET /orders', where: 'query', field: 'per_page', accepted: ['1', '100'], refused: ['0', '101'] },
  {
    op: 'GET /customers',
    where: 'query',
    field: 'cursor',
    accepted: ['abc-_', 'A'.repeat(4096)],
    refused: ['', 'A'.repeat(4097), 'abc$', 'a b', 'a%2Fb', 'abc=', 'é'],
  },
  { op: 'GET /activity', where: 'query', field: 'cursor', accepted: ['abc'], refused: ['A'.repeat(4097), 'a/b'] },
  // Names and ids that become part of a key must be well-formed Unicode; some words are taken.
  {
    op: 'POST /subscriptions',
    where: 'body',
    field: 'plan_name',
    base: subscription,
    accepted: ['Pro', 'Plan #1 / yearly', '專業版'],
    refused: ['', 'lone \ud800', 'x'.repeat(256)],
  },
  {
    op: 'PUT /subscriptions/{id}/cancel',
    where: 'body',
    field: 'reason',
    base: {},
    accepted: ['', 'too expensive', null],
    refused: ['\udfff', 'x'.repeat(256)],
  },
  {
    op: 'POST /customers',
    where: 'body',
    field: 'external_id',
    base: customer,
    accepted: ['crm-1', '...', '.a'],
    refused: ['.', '..', '\ud800x', ''],
  },
  {
    op: 'POST /orders',
    where: 'body',
    field: 'order_no',
    base: order,
    accepted: ['A-1', 'stats2', '...'],
    refused: ['stats', '.', '..', 'a b', 'a/b', '\udc00', ''],
  },
];

/** The body a case sends: the field set on the base, or the value itself (a whole body). */
const bodyOf = (c: Case, value: unknown) => (c.base ? { ...c.base, [c.field]: value } : value);

describe('the OpenAPI document refuses what the server refuses', () => {
  for (const c of CASES) {
    it(`${c.op} ${c.where} ${c.field}`, () => {
      const input = (v: unknown) => (c.where === 'body' ? bodyOf(c, v) : v);
      for (const v of c.refused) {
        const label = `${c.op} ${c.field} = ${JSON.stringify(v)}`;
        expect(serverAccepts(c.op, c.where, c.field, input(v), c.base), `server: ${label}`).toBe(false);
        expect(documentAccepts(c.op, c.where, c.field, input(v)), `document: ${label}`).toBe(false);
      }
      for (const v of c.accepted) {
        const label = `${c.op} ${c.field} = ${JSON.stringify(v)}`;
        expect(serverAccepts(c.op, c.where, c.field, input(v), c.base), `server: ${label}`).toBe(true);
        expect(documentAccepts(c.op, c.where, c.field, input(v)), `document: ${label}`).toBe(true);
      }
    });
  }

  it('documents every currency code the server takes, in any case, and no other three letters', () => {
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    for (const a of letters)
      for (const b of letters)
        for (const code of [`${a}${b}A`, `${a}${b}D`, `${a}${b}R`, `${a}${b}S`, `${a}${b}X`].map((c, i) => (i % 2 ? c.toLowerCase() : c)))
          expect(documentAccepts('GET /orders/stats', 'query', 'currency', code), code).toBe(isCurrency(code));
  });

  it('bounds every cursor parameter in bytes: base64url, at most 4,096 characters', () => {
    const cursors = Object.values(
      doc.paths as Record<string, Record<string, { parameters?: { name: string; schema: Record<string, unknown> }[] }>>,
    )
      .flatMap((item) => Object.values(item))
      .flatMap((op) => op.parameters ?? [])
      .filter((p) => p.name === 'cursor');
    expect(cursors.length).toBeGreaterThanOrEqual(8);
    for (const p of cursors) expect(p.schema).toMatchObject({ type: 'string', minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9_-]+$' });
  });

  it('links each create to the read of what it created', () => {
    const byId = new Map<string, { path: string; op: any }>();
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
      for (const op of Object.values(item)) byId.set(op.operationId, { path, op });
    expect(Object.keys(CREATE_LINKS).sort()).toEqual(['customersCreate', 'ordersCreate', 'subscriptionsCreate', 'webhookEndpointsCreate']);
    for (const [create, links] of Object.entries(CREATE_LINKS)) {
      const created = byId.get(create)!;
      expect(created.op.responses['201'].links).toEqual(links);
      const data = created.op.responses['201'].content['application/json'].schema;
      const resolved = data.$ref ? doc.components.schemas[data.$ref.split('/').pop()] : data;
      for (const link of Object.values(links)) {
        const target = byId.get(link.operationId)!;
        expect(target, link.operationId).toBeDefined();
        const pathParams = [...target.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        expect(Object.keys(link.parameters).sort()).toEqual(pathParams.sort());
        for (const expr of Object.values(link.parameters)) {
          const field = expr.replace('$response.body#/data/', '');
          const props = resolved.properties.data.$ref
            ? doc.components.schemas[resolved.properties.data.$ref.split('/').pop()].properties
            : resolved.properties.data.properties;
          expect(props[field], `${create} → ${field}`).toBeDefined();
        }
      }
    }
  });
});
