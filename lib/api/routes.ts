import type { RouteDef } from '#lib/http/route';
import { routes as systemRoutes } from '#lib/api/system-routes';
import { routes as activityRoutes } from '#lib/activity/routes';
import { routes as customerRoutes } from '#lib/customers/routes';
import { routes as exchangeRateRoutes } from '#lib/exchange-rates/routes';
import { routes as backofficeRoutes } from '#lib/merchants/routes';
import { routes as metricsRoutes } from '#lib/metrics/routes';
import { routes as orderRoutes } from '#lib/orders/routes';
import { routes as salesRoutes } from '#lib/sales/routes';
import { routes as settingsRoutes } from '#lib/settings/routes';
import { routes as subscriptionRoutes } from '#lib/subscriptions/routes';
import { routes as webhookRoutes } from '#lib/webhooks/routes';

/**
 * The route table: the single source for the CDK API (one function per entry), the local server
 * and the OpenAPI document: the union of each resource's routes (`lib/<resource>/routes.ts`). A
 * handler imports only its own resource's file, so its bundle carries no other resource's schemas.
 * Adding an endpoint is one entry in its resource's file plus its handler module.
 */
export const routes = {
  ...systemRoutes,
  ...backofficeRoutes,
  ...settingsRoutes,
  ...customerRoutes,
  ...orderRoutes,
  ...subscriptionRoutes,
  ...webhookRoutes,
  ...metricsRoutes,
  ...salesRoutes,
  ...exchangeRateRoutes,
  ...activityRoutes,
};

export type RouteName = keyof typeof routes;
export const routeList: (RouteDef & { name: RouteName })[] = Object.entries(routes).map(([name, route]) => ({
  name: name as RouteName,
  ...(route as RouteDef),
}));

/** The catch-all handler for unknown paths (API Gateway `$default`). */
export const NOT_FOUND_HANDLER = 'functions/system/not-found.ts';
