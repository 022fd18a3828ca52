import { notFoundHandler } from '#lib/http/handler';
import { routeList } from '#lib/api/routes';

export const handler = notFoundHandler(routeList);
