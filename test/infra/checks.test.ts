import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { App, CfnResource, Stack, Validations } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNagChecks, NAG_REASONS, nagPacks } from '../../infra/nag.ts';
import { PROJECT_ROOT } from '../../infra/paths.ts';
import { fixtureProjectRoot, synthStack } from './support/stack.ts';

/**
 * The static checks on the synthesized stack: cdk-nag 3 (AwsSolutions, Serverless)
 * with every acknowledgment on its own resource and with its reason, and cfn-lint on the template.
 * One synth for the file.
 */
const cfnLint = await promisify(execFile)('cfn-lint', ['--version']).then(
  () => true,
  () => false,
);

let fixture: ReturnType<typeof fixtureProjectRoot>;
let synthesized: ReturnType<typeof synthStack>;
let dir: string;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  // Without cfn-lint, CDK's own CloudFormation validation (schemas only, half a minute) checks the template instead.
  synthesized = synthStack(fixture.root, {}, !cfnLint);
  dir = mkdtempSync(join(tmpdir(), 'infra-checks-'));
}, 120_000);
afterAll(() => {
  fixture.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** Every acknowledgment recorded in the stack: where, which rule, why. */
const acknowledgments = (stack: Stack) =>
  stack.node
    .findAll()
    .flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ construct: c, id, reason }))),
    );

describe('cdk-nag', () => {
  it('AwsSolutions and Serverless find nothing that is not acknowledged, in the API stack and the edge stack', () => {
    expect(synthesized.edge).toBeDefined();
    for (const stack of [synthesized.stack, synthesized.edge!]) {
      for (const pack of nagPacks()) {
        const report = pack.validateScope(stack);
        const found = report.violations.map(
          (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
        );
        expect(found, `${pack.name} on ${stack.stackName}`).toEqual([]);
        expect(report.success).toBe(true);
      }
    }
    // The edge stack (the web ACL and its log) needs no acknowledgment at all.
    expect(acknowledgments(synthesized.edge!)).toEqual([]);
  });

  it('each acknowledgment is on one CloudFormation resource, never a stack or subtree, and gives its reason', () => {
    const acks = acknowledgments(synthesized.stack);
    expect(acks.length).toBeGreaterThan(0);
    const reasons = new Set<string>(Object.values(NAG_REASONS));
    for (const { construct, id, reason } of acks) {
      // CDK's own annotations (warnings) sit on the L2 construct that added them; nag findings on resources.
      if (!id.startsWith('Annotation::')) expect(CfnResource.isCfnResource(construct), `${id} on ${construct.node.path}`).toBe(true);
      expect(reasons.has(reason), `${id} on ${construct.node.path}: ${reason}`).toBe(true);
    }
    // Which rules are acknowledged at all: a new kind of finding must be looked at, not added here by habit.
    // The scheduler's invoke grant names its check function's logical id: compared by shape.
    const rules = [
      ...new Set(acks.map((a) => a.id.replace(/^annotation::/i, '').replace(/<CancelSchedulerCheckFunction\w+\.Arn>/, '<check>'))),
    ].sort();
    expect(rules).toEqual([
      '@aws-cdk/aws-cloudfront:minimumProtocolVersionWithoutCertificate',
      'AwsSolutions-APIG4',
      'AwsSolutions-CFR1',
      'AwsSolutions-CFR2',
      'AwsSolutions-CFR3',
      'AwsSolutions-CFR4',
      'AwsSolutions-COG8',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-IAM5[Resource::<check>:*]',
      'AwsSolutions-L1',
      'AwsSolutions-S1',
      'AwsSolutions-SF1',
      // The API's origin secret: resolved into CloudFront and the functions at deploy (NAG_REASONS.originSecret).
      'AwsSolutions-SMG4',
      'AwsSolutions-SQS3',
      // The outbox sweeper's schedule: a lost run is followed by the next (NAG_REASONS.sweepSchedule).
      'Serverless-EventBusDLQ',
      'Serverless-LambdaAsyncFailureDestination',
      'Serverless-LambdaDLQ',
      'Serverless-LambdaEventSourceMappingDestination',
      'Serverless-LambdaLatestVersion',
      'Serverless-SQSRedrivePolicy',
    ]);
  });

  it('registered on an app (as infra/app.ts does), an unacknowledged finding fails the synth', () => {
    const probe = (acknowledged: boolean) => {
      const app = new App({ outdir: join(dir, `probe-${acknowledged}`), builtinCloudFormationValidation: false });
      const queue = new Queue(new Stack(app, 'Probe'), 'Queue', { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true });
      if (acknowledged) {
        for (const id of ['AwsSolutions-SQS3', 'Serverless-SQSRedrivePolicy'])
          Validations.of(queue.node.defaultChild!).acknowledge({ id, reason: 'probe' });
      }
      addNagChecks(app);
      return () => app.synth();
    };
    expect(probe(false)).toThrow(/AwsSolutions-SQS3[\s\S]*Serverless-SQSRedrivePolicy/);
    expect(probe(true)).not.toThrow();
  });

  it('the wildcard acknowledgment sits only on policies whose one "*" resource is X-Ray', () => {
    const template = synthesized.template.toJSON() as { Resources: Record<string, { Type: string; Properties: any }> };
    const wildcardAcks = acknowledgments(synthesized.stack).filter((a) => a.id.endsWith('IAM5[Resource::*]'));
    for (const { construct } of wildcardAcks) {
      const policy = template.Resources[synthesized.stack.getLogicalId(construct as CfnResource)];
      expect(policy.Type).toBe('AWS::IAM::Policy');
      const wildcard = (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]).filter((s) =>
        [s.Resource].flat().includes('*'),
      );
      const actions = wildcard.flatMap((s) => [s.Action].flat()).sort();
      // A function's tracing writes segments; the scheduler's state machine also reads sampling rules.
      const tracing =
        construct === synthesized.stack.cancelScheduler.stateMachine.role.node.tryFindChild('DefaultPolicy')?.node.defaultChild;
      expect(actions).toEqual(
        tracing
          ? ['xray:GetSamplingRules', 'xray:GetSamplingTargets', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']
          : ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'],
      );
    }
  });
});

describe.skipIf(!cfnLint)('cfn-lint (skipped when cfn-lint is not installed: pip install cfn-lint)', () => {
  it('reports no error, and no warning that .cfnlintrc.yaml does not explain', async () => {
    // The only check the project's config ignores, each with its reason written there.
    const config = readFileSync(join(PROJECT_ROOT, '.cfnlintrc.yaml'), 'utf8');
    expect([...config.matchAll(/^\s+- ([EWI]\d+)\s*$/gm)].map((m) => m[1])).toEqual(['W3005']);
    // Every template as deployed: the root, each nested stack's (a file of its own) and the edge stack's.
    expect(Object.keys(synthesized.templates)).toContain(synthesized.edge!.stackName);
    const files = Object.values(synthesized.templates).map((t, i) => {
      const file = join(dir, `template-${i}.json`);
      writeFileSync(file, JSON.stringify(t));
      return file;
    });
    expect(files.length).toBeGreaterThan(1);
    // Run from the project root so cfn-lint reads .cfnlintrc.yaml, as .ci/run does. Exit code: a bit
    // field of errors (2), warnings (4), informational (8); the JSON lists each finding.
    const output = await promisify(execFile)('cfn-lint', ['--format', 'json', ...files], {
      cwd: PROJECT_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    }).then(
      (r) => r.stdout,
      (e: { stdout?: string; code?: number }) => {
        if (typeof e.stdout !== 'string' || !e.stdout.trim().startsWith('[')) throw e;
        return e.stdout;
      },
    );
    const findings = JSON.parse(output) as { Rule: { Id: string }; Level: string; Message: string }[];
    expect(findings.map((f) => `${f.Level} ${f.Rule.Id}: ${f.Message}`)).toEqual([]);
  }, 180_000);
});
