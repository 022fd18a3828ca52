import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { BuildMiddleware, MetadataBearer } from '@smithy/types';
import { afterEach, beforeAll } from 'vitest';
import { allowingStatement, type Authorization, dynamodbAuthorizations } from './iam/authorize.ts';
import type { StackPolicies } from './iam/policies.ts';

/**
 * Every AWS request a deployed function's code sends in any test is checked against that
 * function's IAM policy in the synthesized stack (test/support/iam/policies.ts, written once per
 * run by the global setup): DynamoDB request by request and item by item, with its table or index,
 * partition key, attributes and return values, conditions included (`dynamodb:LeadingKeys`,
 * `dynamodb:Attributes`, `dynamodb:ReturnValues`); SQS, EventBridge and KMS by action. A request
 * the policy would deny is refused as AWS would refuse it (AccessDeniedException), and the test
 * that made it fails, naming the function, the action and the key. The function is the one whose
 * code runs (`asFunction`, lib/shared/invocation.ts: every route and worker entry); test setup
 * outside any function is not checked. DynamoDB Local checks no IAM: this is where AWS's does.
 */

let policies: StackPolicies | undefined;
const stackPolicies = (): StackPolicies => {
  if (policies) return policies;
  const file = process.env.IAM_POLICIES_FILE;
  if (!file) throw new Error('IAM_POLICIES_FILE is not set: the global setup (test/support/global-setup.ts) writes it');
  return (policies = JSON.parse(readFileSync(file, 'utf8')) as StackPolicies);
};

export class AccessDeniedException extends Error {
  override name = 'AccessDeniedException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
}

const denials: string[] = [];
/** The deployed functions' names and handler modules (for the check's own tests). */
export const checkedFunctions = () => Object.keys(stackPolicies().functions);

/** Denials recorded since the last call (for the check's own tests). */
export const takeIamDenials = (): string[] => denials.splice(0);

/** The denied authorisations of a request sent by `fn`, as messages; none when every one is allowed. */
export const deniedBy = (fn: string, service: string, authorizations: Authorization[]): string[] => {
  const policy = stackPolicies().functions[fn];
  // A route a test makes up (the pipeline's own tests) is no deployed function: nothing to check it
  // against. Every deployed one has a policy (test/infra/iam-check.test.ts).
  if (!policy) return [];
  return authorizations
    .filter((a) => !allowingStatement(policy.statements, a, service))
    .map(
      (a) =>
        `${policy.name} may not ${service}:${a.action} on ${a.resource}${a.key ? ` (key ${a.key})` : ''}` +
        `${a.attributes ? ` [attributes ${a.attributes.join(', ')}]` : ''}${a.returnValues ? ` [ReturnValues ${a.returnValues}]` : ''}`,
    );
};

let currentFunction: () => string | undefined = () => undefined;

const NAME = 'testIamCheck';
const check: BuildMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
  const fn = currentFunction();
  const raw = (args.request as { body?: unknown } | undefined)?.body;
  const body = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? new TextDecoder().decode(raw) : null;
  if (fn && body) {
    const operation = String(context.commandName ?? '').replace(/Command$/, '');
    const found = deniedBy(
      fn,
      'dynamodb',
      dynamodbAuthorizations(operation, JSON.parse(body), () => stackPolicies().table),
    );
    if (found.length) {
      denials.push(...found);
      throw new AccessDeniedException(`denied by IAM: ${found.join('; ')}`);
    }
  }
  return next(args);
};

/** SQS authorises its batch actions as the single ones (SendMessageBatch needs sqs:SendMessage). */
const actionOf = (service: string, command: string) => (service === 'sqs' ? command.replace(/Batch$/, '') : command);

/** The services whose clients the code creates besides DynamoDB's, checked by action (their resources are emulators' here). */
const SERVICES: Record<string, string> = { SQS: 'sqs', EventBridge: 'events', KMS: 'kms' };

// Installed once the test file is loaded (importing the code here would load the pipeline's
// modules before a test file sets up their environment, as test/support/write-limits.ts says).
beforeAll(async () => {
  currentFunction = (await import('#lib/shared/invocation')).currentFunction;
  const stack = (await import('#lib/db/client')).db().middlewareStack;
  stack.remove(NAME);
  stack.add(check, { step: 'build', name: NAME });
  // Every other client: its send, by the service it names (the SDK loads @smithy/core as CommonJS).
  const { Client } = createRequire(import.meta.url)('@smithy/core/client') as {
    Client: { prototype: { send: (...args: any[]) => Promise<unknown> } & Record<string, any> };
  };
  if (Client.prototype.__iamChecked) return;
  const send = Client.prototype.send;
  Client.prototype.send = function (this: { config?: { serviceId?: string } }, command: { constructor: { name: string } }, ...rest) {
    const fn = currentFunction();
    const service = SERVICES[this.config?.serviceId ?? ''];
    if (fn && service) {
      const found = deniedBy(fn, service, [{ action: actionOf(service, command.constructor.name.replace(/Command$/, '')), resource: '*' }]);
      if (found.length) {
        denials.push(...found);
        return Promise.reject(new AccessDeniedException(`denied by IAM: ${found.join('; ')}`));
      }
    }
    return send.call(this, command, ...rest);
  };
  Client.prototype.__iamChecked = true;
});

afterEach(() => {
  const found = takeIamDenials();
  if (found.length)
    throw new AccessDeniedException(`this test sent requests IAM would deny on AWS:\n- ${[...new Set(found)].join('\n- ')}`);
});
