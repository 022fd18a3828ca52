import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, vi } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db } from '#lib/db/client';
import { logger } from '#lib/logger';

/**
 * Unauthenticated requests from 127.0.0.1 share one per-IP window across every test file of the run
 * (one DynamoDB Local). A file that sends them moves its clock to a random minute of the 22nd
 * century, so its window is its own and other files' counts cannot reach it (nor its theirs).
 */
export const isolatedClock = (opts: { secondOfMinute?: number } = {}) => {
  const minute = Date.UTC(2100, 0, 1) + randomInt(0, 2 ** 31) * 60_000;
  const startIso = new Date(minute + (opts.secondOfMinute ?? 1) * 1000).toISOString();
  let clock: ReturnType<typeof fixedClock>;
  beforeAll(() => {
    clock = fixedClock(startIso);
  });
  afterAll(() => resetClock());
  return {
    /** Unix seconds of the instant the clock starts at. */
    get start() {
      return Math.floor(Date.parse(startIso) / 1000);
    },
    set: (iso: string) => clock.set(iso),
    advance: (ms: number) => clock.advance(ms),
  };
};

/** Runs `fn` with the named variables set, restoring them afterwards (config reads env per call). */
export const withEnv = async <T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> => {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
};

/** Collects what the logger writes to stdout/stderr while `fn` runs, at INFO level. */
export const captureLogs = async <T>(fn: () => Promise<T>): Promise<{ result: T; lines: Record<string, any>[]; raw: string }> => {
  const chunks: string[] = [];
  const grab = (chunk: unknown) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(grab as never);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(grab as never);
  const level = logger.getLevelName();
  logger.setLogLevel('INFO');
  // Powertools' injectLambdaContext puts the configured level (SILENT in tests) back on each invocation.
  const refresh = vi.spyOn(logger, 'refreshSampleRateCalculation').mockImplementation(() => undefined);
  try {
    const result = await fn();
    const raw = chunks.join('');
    const lines = raw
      .split('\n')
      .filter((l) => l.trim().startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);
    return { result, lines, raw };
  } finally {
    refresh.mockRestore();
    logger.setLogLevel(level);
    out.mockRestore();
    err.mockRestore();
  }
};

/** Makes the shared DynamoDB client fail the calls `matches` selects (fault injection, not a mock DB). */
export const failDynamoWhen = (
  matches: (command: { constructor: { name: string }; input: any }) => boolean,
  error = new Error('injected fault'),
) => {
  const client = db();
  const original = client.send.bind(client);
  return vi
    .spyOn(client, 'send')
    .mockImplementation(((command: any, ...rest: unknown[]) =>
      matches(command) ? Promise.reject(error) : (original as any)(command, ...rest)) as never);
};
