import { notFoundHandler } from '#lib/http/handler';

export const handler = notFoundHandler();
