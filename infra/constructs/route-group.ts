import { NestedStack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { BASE_PATH, type RouteDef } from '#lib/http/route';

/**
 * The nested stack a route's function, role, log group, route, integration and permission live
 * in: one per first path segment (`/customers…` → `Customers`, `/webhook-endpoints…` →
 * `WebhookEndpoints`). A new route lands in its family's stack, so no other route's resources
 * move (their logical ids stay), and a family at twice today's routes still fits in one template.
 */
export const routeGroupOf = (route: Pick<RouteDef, 'path'>): string => {
  const segment = route.path.split('/')[1] ?? '';
  const words = segment.split(/[^A-Za-z0-9]+/).filter(Boolean);
  if (!words.length) throw new Error(`route ${BASE_PATH}${route.path} has no first path segment to group it by`);
  return `${words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('')}Routes`;
};

/** One family of route functions and their API Gateway routes (see `routeGroupOf`). */
export class RouteGroup extends NestedStack {
  constructor(scope: Construct, id: string, family: string) {
    super(scope, id, { description: `Revenue analytics API: the ${family} route functions and their routes` });
  }
}
