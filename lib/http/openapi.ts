import { createDocument } from 'zod-openapi';
import { routeList } from '#lib/http/routes';
import { BASE_PATH } from '#lib/http/route';

/** The OpenAPI 3.1 document, generated from the route table's zod schemas. */
export const openApiDocument = () => {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routeList) {
    const operation = {
      operationId: route.name,
      summary: route.summary,
      tags: route.tags,
      ...(route.ability ? { security: [{ bearerAuth: [] }], 'x-required-ability': route.ability } : { security: [] }),
      requestParams: {
        ...(route.request?.params ? { path: route.request.params } : {}),
        ...(route.request?.query ? { query: route.request.query } : {}),
        ...(route.request?.headers ? { header: route.request.headers } : {}),
      },
      ...(route.request?.body ? { requestBody: { content: { 'application/json': { schema: route.request.body } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, r]) => [
          status,
          { description: r.description, ...(r.schema ? { content: { 'application/json': { schema: r.schema } } } : {}) },
        ]),
      ),
    };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  return createDocument({
    openapi: '3.1.0',
    info: { title: 'Revenue Analytics API', version: '1.0.0' },
    servers: [{ url: BASE_PATH }],
    components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'ras_… API token' } } },
    paths: paths as never,
  });
};
