import { Logger } from '@aws-lambda-powertools/logger';

/** The shared structured logger. Tokens and secrets are never passed to it. */
export const logger = new Logger({
  serviceName: 'revenue-analytics-api',
  logLevel: (process.env.LOG_LEVEL as 'INFO' | undefined) ?? 'INFO',
});
