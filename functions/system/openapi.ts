import { apiHandler } from '#lib/api/handler';
import { openApiDocument } from '#lib/api/openapi';
import { routes } from '#lib/api/system-routes';

let cached: unknown;
export const handler = apiHandler(routes.openapi, async () => ({ status: 200, body: (cached ??= openApiDocument()) }));
