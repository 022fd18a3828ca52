import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASE_PATH } from '#lib/http/route';
import { DASHBOARD_SECURITY_HEADERS } from '../../web/security-headers.ts';

/**
 * LOCAL ONLY: serves the merchant dashboard (web/, built by Vite) at `/` next to the API, as
 * CloudFront serves it in AWS, plus two local-only files: `/config.json` (what the page needs to
 * know: the API base and how to sign in) and `/dev/session` (a development back-office JWT for the
 * demo merchant's admin; the stand-in for Cognito's hosted UI). Never an API token.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const WEB_SOURCE = join(ROOT, 'web');
export const WEB_DIST = join(WEB_SOURCE, 'dist');

export type DashboardOptions = {
  /** The built bundle (web/dist unless told otherwise). */
  root?: string;
  /** The JWT `/dev/session` hands the page (absent: no session endpoint, the page must bring one). */
  session?: () => Promise<string>;
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

/** The page's configuration in the local stack: same-origin API, development sign-in. */
export const localDashboardConfig = () => ({ apiBase: BASE_PATH, auth: { kind: 'local', sessionUrl: '/dev/session' } });

/** A handler for the non-API paths, or null when the bundle is missing (then `/` is a 404 as before). */
export const dashboardHandler = (options: DashboardOptions) => {
  const root = resolve(options.root ?? WEB_DIST);
  if (!existsSync(join(root, 'index.html'))) return null;
  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) =>
    res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...DASHBOARD_SECURITY_HEADERS, ...extra }).end(body);

  /** True when it answered the request. */
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (url.pathname === '/config.json') {
      send(res, 200, TYPES['.json'], JSON.stringify(localDashboardConfig()));
      return true;
    }
    if (url.pathname === '/dev/session') {
      // An admin's JWT, for a page on this machine only: a page of another site whose name was
      // pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host and gets nothing.
      if (!options.session || !isLoopbackHost(req.headers.host)) return false;
      send(res, 200, TYPES['.json'], JSON.stringify({ id_token: await options.session() }));
      return true;
    }
    const file = resolve(root, `.${url.pathname === '/' ? '/index.html' : decodeURIComponent(url.pathname)}`);
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) return false;
    // Hashed asset names never change content: cache them; index.html is always fetched again.
    const cache: Record<string, string> = url.pathname.startsWith('/assets/')
      ? { 'Cache-Control': 'public, max-age=31536000, immutable' }
      : {};
    send(res, 200, TYPES[extname(file)] ?? 'application/octet-stream', readFileSync(file), cache);
    return true;
  };
};

/** A Host header naming this machine's loopback: localhost, 127.x.x.x or [::1], with any port. */
export const isLoopbackHost = (host: string | undefined): boolean => {
  const name = (host ?? '').replace(/:\d+$/, '').toLowerCase();
  return name === 'localhost' || name === '[::1]' || /^127(\.\d{1,3}){3}$/.test(name);
};

/** The newest modification time under a folder (dist and node_modules left out). */
const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
    if (entry.name === 'dist' || entry.name.startsWith('dist.') || entry.name === 'node_modules') return max;
    const path = join(dir, entry.name);
    return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);

/**
 * Builds web/ into `outDir` with Vite unless the bundle there is newer than every source file. The
 * build goes to a folder beside it and is renamed into place, so a concurrent `npm start` (or test)
 * never serves a half-written bundle; when two build at once, the first rename wins.
 */
export const buildDashboard = async ({ outDir = WEB_DIST, force = false } = {}): Promise<{ built: boolean; ms: number }> => {
  const started = Date.now();
  const index = join(outDir, 'index.html');
  if (!force && existsSync(index) && statSync(index).mtimeMs >= newest(WEB_SOURCE)) return { built: false, ms: 0 };
  const { build } = await import('vite');
  const aside = `${outDir}.${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    await build({
      configFile: join(WEB_SOURCE, 'vite.config.ts'),
      root: WEB_SOURCE,
      logLevel: 'warn',
      build: { outDir: aside, emptyOutDir: true },
    });
    rmSync(outDir, { recursive: true, force: true });
    try {
      renameSync(aside, outDir);
    } catch (err) {
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  return { built: true, ms: Date.now() - started };
};
