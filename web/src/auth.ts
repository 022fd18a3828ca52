/**
 * Signing in. The page never holds an API token: it holds the back-office user's ID token (a JWT of
 * an hour) in sessionStorage and sends it as the bearer. In AWS it comes from the Cognito pool's
 * hosted UI (authorization code + PKCE, public client); locally from the local server's
 * `/dev/session` (a development JWT for the demo merchant's admin).
 */
export type AuthConfig = { kind: 'local'; sessionUrl: string } | { kind: 'cognito'; domain: string; clientId: string; redirectUri: string };
export type DashboardConfig = { apiBase: string; auth: AuthConfig };

const SESSION_KEY = 'dashboard.session';
const PKCE_KEY = 'dashboard.pkce';
type Session = { idToken: string; expiresAt: number };

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** `exp` of a JWT, in ms (the server verifies it; the page only needs to know when to sign in again). */
const expiryOf = (jwt: string): number => {
  try {
    const payload = JSON.parse(atob(jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as { exp?: number };
    return (payload.exp ?? 0) * 1000;
  } catch {
    return 0;
  }
};

const store = (idToken: string) =>
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ idToken, expiresAt: expiryOf(idToken) } satisfies Session));

const stored = (): Session | null => {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as Session | null;
    // A minute of margin: a token about to expire is replaced rather than refused mid-page.
    return s && s.expiresAt - 60_000 > Date.now() ? s : null;
  } catch {
    return null;
  }
};

export const forgetSession = () => sessionStorage.removeItem(SESSION_KEY);

/** Sends the browser to Cognito's hosted UI (never returns). */
const redirectToHostedUi = async (auth: Extract<AuthConfig, { kind: 'cognito' }>): Promise<never> => {
  const verifier = randomString();
  const state = randomString();
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state }));
  const url = new URL('/oauth2/authorize', auth.domain);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: auth.clientId,
    redirect_uri: auth.redirectUri,
    scope: 'openid email',
    code_challenge_method: 'S256',
    code_challenge: challenge,
    state,
  }).toString();
  location.assign(url.toString());
  return new Promise<never>(() => undefined);
};

/** Back from the hosted UI with `?code&state`: the code for tokens (the ID token is all we keep). */
const completeHostedUi = async (auth: Extract<AuthConfig, { kind: 'cognito' }>, params: URLSearchParams): Promise<string> => {
  const pkce = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? 'null') as { verifier: string; state: string } | null;
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, '', location.pathname + location.hash);
  if (!pkce || pkce.state !== params.get('state')) throw new Error('The sign-in answer did not match this browser tab. Sign in again.');
  const res = await fetch(new URL('/oauth2/token', auth.domain), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: auth.clientId,
      code: params.get('code')!,
      redirect_uri: auth.redirectUri,
      code_verifier: pkce.verifier,
    }),
  });
  if (!res.ok) throw new Error(`Sign-in failed (${res.status}).`);
  return ((await res.json()) as { id_token: string }).id_token;
};

/** The ID token to send: the stored one while valid, else a new one (may leave the page to sign in). */
export const idToken = async (config: DashboardConfig, { renew = false } = {}): Promise<string> => {
  const current = renew ? null : stored();
  if (current) return current.idToken;
  const { auth } = config;
  let token: string;
  if (auth.kind === 'local') {
    const res = await fetch(auth.sessionUrl, { cache: 'no-store' });
    if (!res.ok) throw new Error(`No development session (${res.status}).`);
    token = ((await res.json()) as { id_token: string }).id_token;
  } else {
    const params = new URLSearchParams(location.search);
    token = params.has('code') ? await completeHostedUi(auth, params) : await redirectToHostedUi(auth);
  }
  store(token);
  return token;
};

export const signOut = (config: DashboardConfig) => {
  forgetSession();
  if (config.auth.kind === 'cognito') {
    const url = new URL('/logout', config.auth.domain);
    url.search = new URLSearchParams({ client_id: config.auth.clientId, logout_uri: config.auth.redirectUri }).toString();
    location.assign(url.toString());
  } else location.reload();
};
