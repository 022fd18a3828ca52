/** What a token may do (docs/authentication-and-limits.md); routes name the one they need. */
export const ABILITIES = [
  'customers:read',
  'customers:write',
  'orders:read',
  'orders:write',
  'subscriptions:read',
  'subscriptions:write',
  'webhooks:read',
  'webhooks:write',
  'analytics:read',
  'analytics:write',
  'activity:read',
] as const;
export type Ability = (typeof ABILITIES)[number];
