import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the project is, and the handler module of each function outside the route table (the
 * route table's and the 404's are in lib/api/routes.ts). Free of constructs, so the bundler
 * (infra/bundles/build.ts), which every function construct asks for its code, can list every
 * function without importing the constructs that create them.
 */

/** The repository's root: package.json, the lockfile, and every handler module's path is relative to it. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The outbox relay (infra/constructs/outbox-relay.ts): table stream → event bus. */
export const OUTBOX_RELAY_HANDLER = 'functions/outbox/relay.ts';
/** The outbox sweeper (infra/constructs/outbox-relay.ts): pending events → event bus, on a schedule. */
export const OUTBOX_SWEEPER_HANDLER = 'functions/outbox/sweeper.ts';
/** The pending-moves applier (infra/constructs/pending-moves-applier.ts): table stream → aggregate moves applied. */
export const PENDING_MOVES_APPLIER_HANDLER = 'functions/metrics/pending-applier.ts';
/** The recount worker (infra/constructs/recount-worker.ts): table stream → the figures recounted after a zone or rate change. */
export const RECOUNT_WORKER_HANDLER = 'functions/metrics/recount-worker.ts';
/** Webhook fan-out (infra/constructs/webhook-delivery.ts): events queue → one task per endpoint. */
export const WEBHOOK_FAN_OUT_HANDLER = 'functions/webhooks/fan-out.ts';
/** Webhook delivery (infra/constructs/webhook-delivery.ts): one task → one signed request. */
export const WEBHOOK_DELIVER_HANDLER = 'functions/webhooks/deliver.ts';
/** The scheduled cancellation's check (infra/constructs/cancel-scheduler.ts). */
export const CANCEL_CHECK_HANDLER = 'functions/subscriptions/apply-cancel.ts';
