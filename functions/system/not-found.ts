import { notFoundHandler } from '#lib/http/handler';
import { routeList } from '#lib/http/routes';

export const handler = notFoundHandler(routeList);
