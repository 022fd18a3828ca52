import { notFoundHandler } from '#lib/api/handler';
import { routeList } from '#lib/api/routes';

export const handler = notFoundHandler(routeList);
