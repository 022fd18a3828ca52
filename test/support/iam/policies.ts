import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { Stack, Stage } from 'aws-cdk-lib';
import { ApiFunction } from '../../../infra/constructs/api-function.ts';
import { functionEntries } from '../../../infra/bundles/build.ts';
import { fixtureProjectRoot, idOf, resources, synthStack } from '../../infra/support/stack.ts';
import { arnOf, renderResource, type Statement } from './authorize.ts';

/** Every deployed function's IAM statements, by its name and by its handler module; the table's ARN as they render it. */
export type StackPolicies = { table: string; functions: Record<string, { name: string; statements: Statement[] }> };

/**
 * The policies of the stack as `cdk synth` writes it (no bundling): for each Lambda function of
 * `functionEntries()`, every Allow statement of its role (inline and attached policies), resources
 * rendered. The one source of what a function may do; nothing is listed by hand.
 */
export const synthPolicies = (): StackPolicies => {
  const fixture = fixtureProjectRoot();
  let outdir: string | undefined;
  try {
    const { stack, template } = synthStack(fixture.root);
    outdir = Stage.of(stack)?.outdir;
    const tables = Object.keys(resources(template, 'AWS::DynamoDB::Table'));
    if (tables.length !== 1) throw new Error(`expected one table in the stack, found ${tables.length}`);
    const policies = resources(template, 'AWS::IAM::Policy');
    const roles = resources(template, 'AWS::IAM::Role');
    const entries = functionEntries();
    const functions: StackPolicies['functions'] = {};
    for (const fn of stack.node.findAll().filter((c): c is ApiFunction => c instanceof ApiFunction)) {
      const entry = entries.find((e) => e.handlerPath === fn.handlerPath);
      if (!entry) throw new Error(`${fn.node.path}: its handler ${fn.handlerPath} is not in functionEntries()`);
      const roleId = idOf(Stack.of(fn.role!), fn.role!);
      const documents = [
        ...Object.values(policies)
          .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
          .map((p) => p.Properties.PolicyDocument),
        ...((roles[roleId]?.Properties.Policies ?? []) as { PolicyDocument: unknown }[]).map((p) => p.PolicyDocument),
      ] as { Statement: { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Statement['condition'] }[] }[];
      if (roles[roleId]?.Properties.ManagedPolicyArns?.length) throw new Error(`${entry.name}: a managed policy the IAM check cannot read`);
      const statements = documents.flatMap((d) =>
        d.Statement.map((s) => {
          if (s.Effect !== 'Allow') throw new Error(`${entry.name}: a ${s.Effect} statement the IAM check does not evaluate`);
          return { actions: [s.Action].flat(), resources: [s.Resource].flat().map(renderResource), condition: s.Condition };
        }),
      );
      const policy = { name: entry.name, statements };
      functions[entry.name] = policy;
      functions[entry.handlerPath] = policy;
    }
    const missing = entries.filter((e) => !functions[e.name]);
    if (missing.length) throw new Error(`functions with no construct in the stack: ${missing.map((e) => e.name).join(', ')}`);
    return { table: arnOf(tables[0]!), functions };
  } finally {
    fixture.remove();
    // The synth's own temporary cloud assembly (tens of MB), once per test run.
    if (outdir?.startsWith(tmpdir())) rmSync(outdir, { recursive: true, force: true });
  }
};

export const writePolicies = (file: string) => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(synthPolicies()));
};
