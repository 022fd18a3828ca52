import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

export type Run = { code: number; stdout: string; stderr: string; json: any };

/** `npm run ops -- …`, run as operators run it: a child process (stdout parsed as JSON when it is), in `cwd` (the project's root unless told). */
export const runCli = (args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<Run> =>
  new Promise((done) => {
    execFile(
      TSX,
      [resolve(ROOT, 'infra/ops/cli.ts'), ...args],
      // Killed past this (a hang); an import on a loaded machine may take a minute.
      { cwd, env: { ...env, NODE_NO_WARNINGS: '1' }, timeout: 120_000 },
      (err, stdout, stderr) => {
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
      },
    );
  });

/** `ops …` with this process's environment (the run's DynamoDB Local). */
export const ops = (...args: string[]) => runCli(args, process.env);

/** A command that must succeed: its JSON output. */
export const ok = async (...args: string[]) => {
  const r = await ops(...args);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.json;
};
