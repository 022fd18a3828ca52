import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '../support/api.ts';
import { isolatedClock } from './support.ts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument } from '#lib/api/openapi';
import { authKindOf, type RouteDef } from '#lib/http/route';
import { routeList } from '#lib/api/routes';

/** GET /v1/openapi.json: an OpenAPI 3.1 document that matches the route table. Checked by walking it. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];
const routes = routeList as (RouteDef & { name: string })[];

let doc: any;
beforeAll(async () => {
  const r = await api.get('/openapi.json');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('application/json');
  expect(r.headers.get('x-ratelimit-limit')).toBe('100000');
  doc = r.body;
});

/** Every node of the document, with its JSON pointer. */
const walk = function* (node: unknown, pointer = '#'): Generator<[string, any]> {
  yield [pointer, node];
  if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) yield* walk(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  }
};
const resolve = (ref: string): unknown =>
  ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((node, key) => (node === undefined ? undefined : node[key]), doc);

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ path, method, op })),
  );

describe('GET /v1/openapi.json', () => {
  it('is public and is the generated document', () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it("is a valid OpenAPI 3.1 document by the specification's own JSON Schema (@seriousme/openapi-schema-validator)", async () => {
    const result = await new Validator().validate(JSON.parse(JSON.stringify(doc)));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('is OpenAPI 3.1.0 with info, the /v1 server and the bearer scheme', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
    expect(doc.servers).toEqual([{ url: '/v1' }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const path of Object.keys(doc.paths)) expect(path).toMatch(/^\/[^?#]*$/);
  });

  it('lists exactly the routes of the route table, each once, with unique operation ids', () => {
    const listed = operations()
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`)
      .sort();
    const expected = routes.map((r) => `${r.method} ${r.path}`).sort();
    expect(listed).toEqual(expected);
    for (const route of routes) expect(doc.paths[route.path][route.method.toLowerCase()].operationId).toBe(route.name);
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('declares bearer security and the ability on every protected operation, none on public ones', () => {
    for (const route of routes) {
      const op = doc.paths[route.path][route.method.toLowerCase()];
      if (route.ability) {
        // Routes open to the dashboard also take the back-office JWT (test/web/dashboard-auth.test.ts).
        expect(op.security, route.name).toEqual(
          route.dashboard
            ? [{ bearerAuth: [route.ability] }, { backofficeJwt: [...route.dashboard.roles] }]
            : [{ bearerAuth: [route.ability] }],
        );
        expect(op.description, route.name).toContain(`\`${route.ability}\` ability`);
        expect(op['x-required-ability'], route.name).toBe(route.ability);
        expect(op.responses['401'], route.name).toBeDefined();
        expect(op.responses['403'], route.name).toBeDefined();
      } else if (authKindOf(route) === 'none') {
        expect(op.security, route.name).toEqual([]);
      }
    }
  });

  it('resolves every $ref', () => {
    const refs = [...walk(doc)].filter(([, n]) => n && typeof n === 'object' && typeof n.$ref === 'string');
    expect(refs.length).toBeGreaterThan(10);
    for (const [at, node] of refs) {
      expect(node.$ref, at).toMatch(/^#\//);
      expect(resolve(node.$ref), `${at} → ${node.$ref}`).toBeDefined();
    }
  });

  it('declares each path parameter as a required path parameter', () => {
    for (const { path, method, op } of operations()) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path');
      expect(declared.map((p: any) => p.name).sort(), `${method} ${path}`).toEqual(names.sort());
      for (const p of declared) expect(p.required).toBe(true);
      for (const p of op.parameters ?? []) {
        expect(['path', 'query', 'header', 'cookie']).toContain(p.in);
        expect(p.schema, `${method} ${path} ${p.name}`).toBeDefined();
      }
    }
  });

  it('gives every operation described JSON responses (and CSV where offered) with the common headers, 429 with Retry-After', () => {
    for (const { path, method, op } of operations()) {
      const label = `${method} ${path}`;
      expect(Object.keys(op.responses).length, label).toBeGreaterThan(0);
      for (const [status, res] of Object.entries<any>(op.responses)) {
        expect(status, label).toMatch(/^[1-5]\d\d$/);
        expect(res.description, `${label} ${status}`).toEqual(expect.any(String));
        for (const h of ['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          expect(res.headers?.[h], `${label} ${status} ${h}`).toBeDefined();
        }
        // JSON, and CSV beside it on the 200 of a route that offers it (docs/api-conventions.md, "CSV").
        const csv = routes.find((r) => r.path === path && r.method.toLowerCase() === method)?.csv === true && status === '200';
        expect(Object.keys(res.content ?? {}), `${label} ${status}`).toEqual(
          res.content ? (csv ? ['application/json', 'text/csv'] : ['application/json']) : [],
        );
      }
      expect(op.responses['429'].headers['Retry-After'], label).toBeDefined();
      expect(op.responses['500'], label).toBeDefined();
      expect(op.responses['503'].headers['Retry-After'], `${label} 503`).toBeDefined();
      const writes = routes.find((r) => r.path === path && r.method.toLowerCase() === method)?.writes;
      expect(op.responses['409'] !== undefined, `${label} 409 iff it writes`).toBe(Boolean(writes));
      if (op.requestBody) {
        expect(op.requestBody.content['application/json'].schema, label).toBeDefined();
        for (const status of ['400', '413', '422']) expect(op.responses[status], `${label} ${status}`).toBeDefined();
      }
    }
  });

  it('documents the idempotency header POST /orders reads and the Idempotent-Replayed header it answers', () => {
    const op = doc.paths['/orders'].post;
    expect(op.parameters.find((p: any) => p.in === 'header' && p.name === 'x-idempotency-key')).toMatchObject({
      schema: { maxLength: 255 },
    });
    expect(op.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
  });

  it('uses only JSON Schema types in its schemas', () => {
    for (const [at, node] of walk(doc)) {
      if (!/\/schema$|\/schemas\/[^/]+$|\/properties\/[^/]+$|\/items$/.test(at) || !node || typeof node !== 'object') continue;
      if (node.type === undefined) continue;
      const types = Array.isArray(node.type) ? node.type : [node.type];
      for (const t of types) expect(JSON_TYPES, at).toContain(t);
      if (types.includes('object') && node.required) {
        for (const key of node.required) expect(node.properties?.[key], `${at} requires ${key}`).toBeDefined();
      }
    }
  });
});
