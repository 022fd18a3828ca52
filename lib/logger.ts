import { Logger } from '#lib/powertools';
import { SERVICE_NAME } from '#lib/observability';

/** The shared structured logger. Tokens and secrets are never passed to it. */
export const logger = new Logger({
  serviceName: SERVICE_NAME,
  logLevel: (process.env.LOG_LEVEL as 'INFO' | undefined) ?? 'INFO',
});
