import { App } from 'aws-cdk-lib';
import { addNagChecks } from './nag.ts';
import { ApiStack, propsFromContext, stackNameFor } from './stack.ts';

/** `npx cdk synth|deploy [-c stage=dev] [-c rateLimitPerHour=…]`; see propsFromContext for the keys. */
const app = new App();
const props = propsFromContext(app.node);
new ApiStack(app, stackNameFor(props.stage), {
  ...props,
  // Account/region from the CLI profile; synth stays offline (no lookups are made).
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'Revenue analytics API: HTTP API, one Lambda per route, DynamoDB single table',
});
// cdk-nag 3 (AwsSolutions, Serverless): an unacknowledged finding fails the synth.
addNagChecks(app);
app.synth();
