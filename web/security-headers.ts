/**
 * The headers the dashboard is served with: by CloudFront's response headers policy in AWS
 * (infra/constructs/dashboard-site.ts) and by the local server (infra/local/dashboard.ts). Scripts
 * come from the page's own origin only; the API (its own origin locally, execute-api in AWS) and
 * Cognito's token endpoint are reached over https; the page cannot be framed.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' https:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

export const DASHBOARD_SECURITY_HEADERS = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
} as const;
