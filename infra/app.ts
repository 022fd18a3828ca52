import { App } from 'aws-cdk-lib';
import { addNagChecks } from './nag.ts';
import { buildStacks, propsFromContext } from './stack.ts';

/**
 * `npx cdk synth|deploy --all [-c stage=dev] [-c rateLimitPerHour=…] [-c edge=false]`; see
 * propsFromContext for the keys. Two stacks per stage unless `edge=false`: the web ACL's in
 * us-east-1, then the API's, which reads it.
 */
const app = new App();
const props = propsFromContext(app.node);
buildStacks(app, {
  ...props,
  // Account/region from the CLI profile; synth stays offline (no lookups are made).
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'Revenue analytics API: HTTP API, one Lambda per route, DynamoDB single table',
});
// cdk-nag 3 (AwsSolutions, Serverless): an unacknowledged finding fails the synth.
addNagChecks(app);
app.synth();
