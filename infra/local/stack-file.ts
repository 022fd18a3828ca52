import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * While `npm start` runs it leaves `.local/stack.json` (its DynamoDB endpoint and table), so the
 * operator CLI can find the local stack when no AWS credentials are configured. It also records the
 * pid of the DynamoDB Local it started, so the next `npm start` can stop it if this one was killed.
 */
export type LocalStack = { pid: number; dynamodbPid?: number; dynamodbEndpoint: string; tableName: string; apiUrl: string };

const FILE = process.env.LOCAL_STACK_FILE ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../.local/stack.json');
/** The file as messages name it. */
export const LOCAL_STACK_FILE_LABEL = process.env.LOCAL_STACK_FILE ?? '.local/stack.json';

/** Another file of the local stack's state, next to the stack file (`.local/<name>`). */
export const localStateFile = (name: string): string => join(dirname(FILE), name);

export const writeLocalStack = (stack: Omit<LocalStack, 'pid'>): void => {
  mkdirSync(dirname(FILE), { recursive: true });
  writeFileSync(FILE, `${JSON.stringify({ pid: process.pid, ...stack }, null, 2)}\n`);
};

/** Removes the file if this process wrote it. */
export const removeLocalStack = (): void => {
  if (readLocalStackFile()?.stack.pid === process.pid) rmSync(FILE, { force: true });
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
};

/** The recorded stack, and whether the `npm start` that wrote it is still running. */
export const readLocalStackFile = (): { stack: LocalStack; running: boolean } | null => {
  let stack: LocalStack;
  try {
    stack = JSON.parse(readFileSync(FILE, 'utf8')) as LocalStack;
  } catch {
    return null;
  }
  if (!Number.isInteger(stack?.pid)) return null;
  return { stack, running: alive(stack.pid) };
};

/** The running local stack, if any. */
export const readLocalStack = (): LocalStack | null => {
  const found = readLocalStackFile();
  return found?.running ? found.stack : null;
};

/** Removes the file of an `npm start` that is no longer running (never a live one's). */
export const removeStaleLocalStack = (): void => {
  if (readLocalStackFile()?.running === false) rmSync(FILE, { force: true });
};

/** Whether the environment names AWS credentials (then the CLI never falls back to the local stack). */
export const awsCredentialsConfigured = (env = process.env): boolean =>
  Boolean(
    env.AWS_ACCESS_KEY_ID ||
      env.AWS_PROFILE ||
      env.AWS_WEB_IDENTITY_TOKEN_FILE ||
      env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI ||
      env.AWS_CONTAINER_CREDENTIALS_FULL_URI ||
      existsSync(env.AWS_SHARED_CREDENTIALS_FILE ?? join(homedir(), '.aws', 'credentials')) ||
      existsSync(env.AWS_CONFIG_FILE ?? join(homedir(), '.aws', 'config')),
  );
