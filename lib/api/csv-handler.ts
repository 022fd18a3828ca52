import httpContentNegotiation from '@middy/http-content-negotiation';
import { apiHandler, type AnswerForm, type ApiRequest, type ApiResult } from '#lib/api/handler';
import { CSV_MEDIA_TYPE, csvPagingHeaders, toCsv } from '#lib/http/csv';
import type { RouteDef } from '#lib/http/route';

/**
 * `apiHandler` for the routes that also answer CSV (`csv: true`: the lists and the metrics reads;
 * docs/api-conventions.md, "CSV"). JSON unless the caller prefers CSV (`Accept`, q-values honoured);
 * nothing asked for is refused, and errors stay JSON. A separate module so that only these
 * functions' bundles carry the CSV writer and the negotiation.
 */
export const csvApiHandler = <R extends RouteDef & { csv: true }>(route: R, fn: (req: ApiRequest<R>) => Promise<ApiResult>) => {
  const form: AnswerForm = {
    negotiate: httpContentNegotiation({
      parseCharsets: false,
      parseEncodings: false,
      parseLanguages: false,
      availableMediaTypes: ['application/json', CSV_MEDIA_TYPE],
      failOnMismatch: false,
    }),
    render: (result, context) =>
      (context as { preferredMediaType?: string }).preferredMediaType === CSV_MEDIA_TYPE && result.status === 200
        ? {
            statusCode: 200,
            headers: { ...result.headers, ...csvPagingHeaders(result.body), 'Content-Type': `${CSV_MEDIA_TYPE}; charset=utf-8` },
            body: toCsv(result.body, route.responses[200]?.schema),
          }
        : null,
  };
  return apiHandler(route, fn, form);
};
