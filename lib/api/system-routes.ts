import * as z from 'zod';
import { defineRoute } from '#lib/http/route';

/** The document's own shape, as far as a client relies on it (the OpenAPI 3.1 specification has the rest). */
const openApiDocumentBody = z
  .looseObject({
    openapi: z.string().meta({ example: '3.1.0' }),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document' });

/** The system routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  openapi: defineRoute({
    method: 'GET',
    path: '/openapi.json',
    handler: 'functions/system/openapi.ts',
    ability: null,
    writes: false,
    summary: 'This OpenAPI document',
    description:
      'The OpenAPI 3.1 document of this API, generated from the same route table the functions are built from. Public: no token needed; it counts against the per-IP limit of unauthenticated requests.',
    tags: ['system'],
    responses: { 200: { description: 'OpenAPI 3.1 document', schema: openApiDocumentBody } },
  }),
};
