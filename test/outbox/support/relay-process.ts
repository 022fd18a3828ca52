import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../../..');

/**
 * Starts the relay as its own process (relay-child.ts: `npm start`'s poller and relay handler,
 * publishing each event's detail as a JSON line to OUT_FILE), so a test can kill -9 it; resolves
 * once it is reading the stream. `children` collects it for the test's cleanup.
 */
export const startRelayProcess = async (env: Record<string, string>, children: ChildProcess[], timeoutMs = 20_000) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/outbox/support/relay-child.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_NO_WARNINGS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const until = Date.now() + timeoutMs;
  while (!out.includes('ready')) {
    if (child.exitCode !== null) throw new Error(`relay process exited: ${out}`);
    if (Date.now() > until) throw new Error('timed out waiting for the relay process');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, output: () => out };
};

/**
 * The event details a relay process published to `file`, in order. Complete lines only: the file
 * is read while the relay may be appending to it.
 */
export const publishedDetails = <T = { id: string; merchant_id: string }>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .slice(0, -1)
        .filter(Boolean)
        .map((l) => JSON.parse(l) as T)
    : [];
