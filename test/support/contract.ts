import { appendFileSync } from 'node:fs';
import { OpenAPIBackend, type Operation } from 'openapi-backend';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '#lib/api/openapi';

/**
 * Every answer a behaviour test receives through `useApi` (test/support/api.ts) is checked against
 * the OpenAPI document by a third-party validator, openapi-backend: it matches the request to its
 * operation (method and path template), and validates the body against the schema of the answered
 * status. Its JSON Schema engine is Ajv's draft 2020-12 (the dialect of OpenAPI 3.1) with the
 * standard formats. What openapi-backend leaves out is checked here, from the same document and
 * with the same Ajv: that the status is documented at all, that a header declared `required` is
 * present, that the declared headers' values match their schemas, and that the media type is a
 * documented one.
 *
 * Requests no operation matches get the API's catch-all answers, which the document's description
 * promises: 404 `{"message": …}`, or 405 `{"message": …}` with `Allow` for a known path asked with a
 * method it does not serve, or the front door's 403 (a stack behind CloudFront, a request sent round
 * it); each with X-Request-Id.
 */

export type Answer = { method: string; path: string; status: number; headers: Headers; text: string };

type Check = { operation: string; status: number; errors: string[] };

/**
 * The document with its response headers' `$ref`s inlined: openapi-backend's quick mode dereferences
 * schemas only (its full mode would first check the document against OpenAPI 3.0's schema).
 */
const withInlineHeaders = () => {
  const doc = JSON.parse(JSON.stringify(openApiDocument()));
  const shared = doc.components?.headers ?? {};
  for (const item of Object.values(doc.paths ?? {}) as Record<string, any>[]) {
    for (const op of Object.values(item)) {
      for (const response of Object.values((op?.responses ?? {}) as Record<string, any>)) {
        for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, any>)) {
          if (header.$ref) response.headers[name] = shared[header.$ref.replace('#/components/headers/', '')];
          if (!response.headers[name]) throw new Error(`unresolved header reference ${header.$ref}`);
        }
      }
    }
  }
  return doc;
};

/**
 * Ajv's draft 2020-12 with the standard formats, one instance per option set (openapi-backend asks
 * for one per operation and context): compiling into a shared instance is what keeps the first
 * answer of each operation cheap.
 */
const ajvs = new Map<string, Ajv2020>();
const ajvFor = (options: object = {}) => {
  const key = JSON.stringify(options);
  let ajv = ajvs.get(key);
  if (!ajv) {
    ajv = new Ajv2020({ ...options, strict: false, allErrors: true });
    addFormats.default(ajv);
    ajvs.set(key, ajv);
  }
  return ajv;
};

const init = async () => {
  const api = new OpenAPIBackend({
    definition: withInlineHeaders(),
    apiRoot: '/',
    // The API serves `/orders` only, not `/orders/`.
    ignoreTrailingSlashes: false,
    // Its document check knows OpenAPI 3.0 only: the 3.1 document is checked by
    // @seriousme/openapi-schema-validator (test/pipeline/openapi.test.ts) and `npm run lint:openapi`.
    quick: true,
    strict: true,
    customizeAjv: (_ajv, options) => ajvFor(options) as never,
  });
  await api.init();
  return api;
};
let backend: ReturnType<typeof init> | undefined;

/** `#/components/schemas/Message`, for the catch-all answers (outside any operation); compiled once. */
let message: ValidateFunction | undefined;
const messageValidator = (api: OpenAPIBackend) => (message ??= ajvFor().compile((api.definition as any).components.schemas.Message));

const ajvErrors = (errors: { instancePath?: string; message?: string; params?: unknown }[] | null | undefined): string[] =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);

/** The documented response of a status: exact, then `4XX`, then `default` (OpenAPI's precedence). */
const documented = (op: Operation, status: number) => {
  const responses = (op.responses ?? {}) as Record<string, any>;
  return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
};

const mediaTypeOf = (headers: Headers) => (headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();

const parse = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: text ? JSON.parse(text) : null };
  } catch {
    return { ok: false };
  }
};

const checkCatchAll = (api: OpenAPIBackend, a: Answer): Check => {
  const errors: string[] = [];
  if (![403, 404, 405].includes(a.status))
    errors.push(
      `no operation matches ${a.method} ${a.path}, and the catch-all answers only 404 or 405 (or the front door's 403), not ${a.status}`,
    );
  if (a.status === 405 && !a.headers.get('allow')) errors.push('a 405 names the allowed methods in Allow');
  if (!a.headers.get('x-request-id')) errors.push('X-Request-Id is missing');
  const body = parse(a.text);
  const validate = messageValidator(api);
  if (!body.ok) errors.push(`the body is not JSON: ${a.text.slice(0, 200)}`);
  else if (!validate(body.value)) errors.push(...ajvErrors(validate.errors));
  return { operation: '(catch-all)', status: a.status, errors };
};

/**
 * The declared headers' values, validated against their schemas (as strings coerced to the schema's
 * type). openapi-backend's own header check compiles four variants for every status of an operation
 * on its first use; this compiles the one status answered, once.
 */
const headerValidators = new Map<string, ValidateFunction>();
const headerValidator = (operation: string, status: number, response: { headers?: Record<string, any> }) => {
  const key = `${operation} ${status}`;
  let validate = headerValidators.get(key);
  if (!validate) {
    const properties = Object.fromEntries(
      Object.entries(response.headers ?? {}).flatMap(([name, header]) => (header.schema ? [[name.toLowerCase(), header.schema]] : [])),
    );
    validate = ajvFor({ coerceTypes: true }).compile({ type: 'object', properties: { headers: { type: 'object', properties } } });
    headerValidators.set(key, validate);
  }
  return validate;
};

const checkOperation = (api: OpenAPIBackend, op: Operation, a: Answer): Check => {
  const operation = op.operationId!;
  const errors: string[] = [];
  const response = documented(op, a.status);
  if (!response) {
    errors.push(`status ${a.status} is not documented (documented: ${Object.keys(op.responses ?? {}).join(', ')})`);
    return { operation, status: a.status, errors };
  }
  // Headers: required ones present, present ones valid against their schemas.
  const headers: Record<string, string> = {};
  a.headers.forEach((value, name) => (headers[name] = value));
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, any>)) {
    if (header.required && !(name.toLowerCase() in headers)) errors.push(`required header ${name} is missing`);
  }
  const validateHeaders = headerValidator(operation, a.status, response);
  if (!validateHeaders({ headers })) errors.push(...ajvErrors(validateHeaders.errors).map((e) => `header ${e}`));
  // Body: its media type documented, and JSON validated against the status's schema.
  const content = (response.content ?? {}) as Record<string, any>;
  const mediaType = mediaTypeOf(a.headers);
  if (!Object.keys(content).length) {
    if (a.text) errors.push(`status ${a.status} documents no body, but one came (${mediaType}): ${a.text.slice(0, 200)}`);
  } else if (!(mediaType in content)) {
    errors.push(`media type "${mediaType}" is not documented for ${a.status} (documented: ${Object.keys(content).join(', ')})`);
  } else if (mediaType === 'application/json' && content[mediaType].schema) {
    const body = parse(a.text);
    if (!body.ok) errors.push(`the body is not JSON: ${a.text.slice(0, 200)}`);
    else errors.push(...ajvErrors(api.validateResponse(body.value, op, a.status).errors).map((e) => `body ${e}`));
  }
  return { operation, status: a.status, errors };
};

/** Checks one answer; throws when it does not match the document (operation, status, the validator's errors). */
export const checkAnswer = async (a: Answer): Promise<void> => {
  const api = await (backend ??= init());
  const url = new URL(a.path, 'http://x');
  const query = Object.fromEntries(url.searchParams);
  const op = api.matchOperation({ method: a.method.toLowerCase(), path: url.pathname, headers: {}, query });
  const check = op ? checkOperation(api, op, a) : checkCatchAll(api, a);
  // CONTRACT_REPORT=file: one JSON line per checked answer (counts, and every mismatch of a run);
  // CONTRACT_MISMATCH=record: mismatches are only reported there (a survey of the whole suite).
  if (process.env.CONTRACT_REPORT) {
    appendFileSync(
      process.env.CONTRACT_REPORT,
      `${JSON.stringify({ ...check, request: `${a.method} ${a.path}`, body: check.errors.length ? a.text.slice(0, 300) : undefined })}\n`,
    );
  }
  if (check.errors.length && process.env.CONTRACT_MISMATCH !== 'record') {
    throw new Error(
      `The answer does not match the OpenAPI document: ${a.method} ${a.path} → ${check.operation} ${check.status}\n  ${check.errors.join('\n  ')}\n  body: ${a.text.slice(0, 500)}`,
    );
  }
};
