import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';
import { ApiStack, PROJECT_ROOT, type ApiStackProps } from '../../../infra/stack.ts';
import type { ApiFunction } from '../../../infra/constructs/api-function.ts';
import { OUTBOX_RELAY_HANDLER } from '../../../infra/constructs/outbox-relay.ts';
import { WEBHOOK_DELIVER_HANDLER, WEBHOOK_FAN_OUT_HANDLER } from '../../../infra/constructs/webhook-delivery.ts';

/** The same feature flags `cdk synth` runs with. */
const cdkJsonContext = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context as Record<string, unknown>;

/** Every handler module the stack names. */
export const STACK_HANDLERS = [...routeList.map((r) => r.handler), NOT_FOUND_HANDLER, OUTBOX_RELAY_HANDLER, WEBHOOK_FAN_OUT_HANDLER, WEBHOOK_DELIVER_HANDLER];

/**
 * A stand-in project root where every handler module of the stack exists (empty), so the template
 * tests do not depend on which handlers are written yet. Bundling is skipped, so nothing reads them.
 * Returns the root and its removal.
 */
export const fixtureProjectRoot = () => {
  const root = mkdtempSync(join(tmpdir(), 'infra-stack-'));
  writeFileSync(join(root, 'package.json'), '{"type":"module"}');
  writeFileSync(join(root, 'package-lock.json'), '{}');
  for (const file of STACK_HANDLERS) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), 'export const handler = () => undefined;\n');
  }
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
};

/**
 * The stack's template without bundling. CDK's CloudFormation validation costs seconds per synth:
 * only one synth of the default stack (stack.test.ts) runs it.
 */
export const synthStack = (projectRoot: string, props: ApiStackProps = {}, validate = false) => {
  const app = new App({ context: { ...cdkJsonContext, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: validate });
  const stack = new ApiStack(app, 'TestApi', { projectRoot, ...props });
  return { stack, template: Template.fromStack(stack) };
};

export type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
export const resources = (template: Template, type: string) => template.findResources(type) as Record<string, Resource>;
/** A construct's CloudFormation logical id (its L1 resource's). */
export const idOf = (stack: Stack, construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as never);
export const logicalId = (stack: Stack, fn: ApiFunction) => idOf(stack, fn);

export type Grant = { action: string; resource: unknown; condition?: unknown };
/** Every statement of a function's role policies, one grant per action and resource (all Allow). */
export const roleGrants = (stack: Stack, template: Template, fn: ApiFunction): Grant[] => {
  const roleId = idOf(stack, fn.role!);
  return Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[])
    .flatMap((s) => {
      if (s.Effect !== 'Allow') throw new Error(`unexpected ${s.Effect} statement in a function role`);
      return [s.Action].flat().flatMap((action) => [s.Resource].flat().map((resource) => ({ action, resource, condition: s.Condition })));
    });
};
