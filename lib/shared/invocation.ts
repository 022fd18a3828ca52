import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The functions the stack deploys outside the route table, by name (a route's function goes by its
 * handler module, `RouteDef.handler`). infra/bundles/build.ts lists them with their handler modules.
 */
export const WORKER_FUNCTIONS = {
  notFound: 'notFound',
  outboxRelay: 'outboxRelay',
  outboxSweeper: 'outboxSweeper',
  pendingMovesApplier: 'pendingMovesApplier',
  recountWorker: 'recountWorker',
  webhookFanOut: 'webhookFanOut',
  webhookDeliver: 'webhookDeliver',
  cancelCheck: 'cancelCheck',
} as const;

/** A worker function's name. */
export type WorkerFunction = keyof typeof WORKER_FUNCTIONS;

const running = new AsyncLocalStorage<string>();

/**
 * `fn` run as the named Lambda function: every AWS request it sends is that function's. The test
 * run checks each against the function's IAM policy in the synthesized stack
 * (test/support/iam-check.ts); logs and traces need nothing of it. The innermost name counts.
 */
export const asFunction =
  <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
  (...args: A): Promise<R> =>
    running.run(name, () => fn(...args));

/** The function whose code is running, when it runs under `asFunction`. */
export const currentFunction = (): string | undefined => running.getStore();
