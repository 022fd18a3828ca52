import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * Stands in for `@aws-sdk/credential-provider-node` in function bundles. Lambda hands a function
 * its role's credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, the
 * first source the default chain tries; the rest of that chain (INI files, SSO, STS, web
 * identity, container and instance metadata) never runs there and costs ~135 KB per bundle.
 */
export const defaultProvider = (init?: Parameters<typeof fromEnv>[0]) => fromEnv(init);
