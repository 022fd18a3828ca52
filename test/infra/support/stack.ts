import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App, NestedStack, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { buildStacks, type AppProps } from '../../../infra/stack.ts';
import type { ApiFunction } from '../../../infra/constructs/api-function.ts';
import { functionEntries } from '../../../infra/bundles/build.ts';
import { PROJECT_ROOT } from '../../../infra/paths.ts';

/** The same feature flags `cdk synth` runs with. */
const cdkJsonContext = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context as Record<string, unknown>;

/** Every handler module the stack names (a synth with bundling fails on any other). */
export const STACK_HANDLERS = functionEntries().map((entry) => entry.handlerPath);

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

type TemplateJson = {
  Resources: Record<string, any>;
  Outputs?: Record<string, { Value: unknown }>;
  Parameters?: Record<string, unknown>;
  [k: string]: unknown;
};

/** `value` with every `{Ref: <key of values>}` and `{'Fn::GetAtt': [<id>, 'Outputs.<name>']}` replaced. */
const substitute = (value: unknown, refs: Map<string, unknown>, outputs: Map<string, unknown>): unknown => {
  if (Array.isArray(value)) return value.map((v) => substitute(v, refs, outputs));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 1 && entries[0][0] === 'Ref' && typeof entries[0][1] === 'string' && refs.has(entries[0][1]))
    return refs.get(entries[0][1]);
  if (entries.length === 1 && entries[0][0] === 'Fn::GetAtt') {
    const [id, attribute] = entries[0][1] as [string, string];
    const key = `${id}.${attribute}`;
    if (outputs.has(key)) return outputs.get(key);
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, substitute(v, refs, outputs)]));
};

/**
 * The whole app as one template: the root stack's resources and every nested stack's, with the
 * nested stacks' wiring undone (a nested template's parameter is replaced by the value the root
 * passes it; the root's `Outputs.X` of a nested stack by the output's value). Assertions then read
 * `{'Fn::GetAtt': [<table>, 'Arn']}` wherever a resource uses the table, whichever template it is
 * in. Logical ids are unique across the app (each is the construct path within its own stack, and
 * a collision fails here). `templates` holds each template as deployed, for per-template limits.
 */
export const flattenApp = (app: App, root: Stack) => {
  const assembly = app.synth();
  const rootJson = assembly.getStackArtifact(root.artifactId).template as TemplateJson;
  const nested = root.node.findAll().filter((c): c is NestedStack => NestedStack.isNestedStack(c));
  const templates: Record<string, TemplateJson> = { [root.stackName]: rootJson };
  const refs = new Map<string, unknown>();
  const outputs = new Map<string, unknown>();
  const nestedJson = nested.map((n) => {
    const json = JSON.parse(readFileSync(join(assembly.directory, n.templateFile), 'utf8')) as TemplateJson;
    templates[n.node.path] = json;
    const resourceId = root.getLogicalId(n.nestedStackResource!);
    const params = (rootJson.Resources[resourceId].Properties?.Parameters ?? {}) as Record<string, unknown>;
    for (const [name, output] of Object.entries(json.Outputs ?? {})) outputs.set(`${resourceId}.Outputs.${name}`, output.Value);
    return { json, params, resourceId };
  });
  const merged: TemplateJson = { ...rootJson, Resources: {} };
  const add = (id: string, resource: unknown) => {
    if (id in merged.Resources) throw new Error(`logical id ${id} is in two templates`);
    merged.Resources[id] = resource;
  };
  const nestedIds = new Set(nestedJson.map((n) => n.resourceId));
  for (const [id, resource] of Object.entries(rootJson.Resources)) if (!nestedIds.has(id)) add(id, substitute(resource, refs, outputs));
  merged.Outputs = substitute(rootJson.Outputs ?? {}, refs, outputs) as TemplateJson['Outputs'];
  for (const { json, params } of nestedJson) {
    const paramRefs = new Map(Object.entries(params));
    for (const [id, resource] of Object.entries(json.Resources)) add(id, substitute(resource, paramRefs, outputs));
  }
  return { template: Template.fromJSON(merged, { skipCyclicalDependenciesCheck: true }), templates };
};

/**
 * The app's template without bundling (the root stack and its nested stacks as one: `flattenApp`).
 * CDK's CloudFormation validation costs half a minute per synth and cfn-lint checks more: only
 * test/infra/checks.test.ts asks for it, when cfn-lint is absent.
 */
export const synthStack = (projectRoot: string, props: AppProps = {}, validate = false) => {
  const app = new App({ context: { ...cdkJsonContext, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: validate });
  const { api: stack, edge } = buildStacks(app, { projectRoot, ...props }, 'TestApi');
  const flat = flattenApp(app, stack);
  // The edge stack (us-east-1, the web ACL) is a stack of its own: its template beside the API's.
  const edgeJson = edge ? (app.synth().getStackArtifact(edge.artifactId).template as TemplateJson) : undefined;
  if (edge && edgeJson) flat.templates[edge.stackName] = edgeJson;
  return { stack, edge, edgeTemplate: edgeJson ? Template.fromJSON(edgeJson) : undefined, ...flat };
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
    .flatMap(
      (p) =>
        p.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[],
    )
    .flatMap((s) => {
      if (s.Effect !== 'Allow') throw new Error(`unexpected ${s.Effect} statement in a function role`);
      return [s.Action].flat().flatMap((action) => [s.Resource].flat().map((resource) => ({ action, resource, condition: s.Condition })));
    });
};

/** A CloudWatch alarm as the template has it, whether it names one metric or a math expression over several. */
export type AlarmView = {
  name: string;
  description: string;
  threshold: number;
  comparison: string;
  datapoints: number;
  evaluationPeriods: number;
  treatMissingData: string;
  actions: unknown[];
  expression?: string;
  metrics: { id?: string; namespace: string; metricName: string; dimensions: unknown; stat: string; period: number }[];
};
export const alarmViews = (template: Template): AlarmView[] =>
  Object.values(resources(template, 'AWS::CloudWatch::Alarm')).map(({ Properties: p }) => ({
    name: p.AlarmName,
    description: p.AlarmDescription,
    threshold: p.Threshold,
    comparison: p.ComparisonOperator,
    datapoints: p.DatapointsToAlarm,
    evaluationPeriods: p.EvaluationPeriods,
    treatMissingData: p.TreatMissingData,
    actions: p.AlarmActions ?? [],
    expression: (p.Metrics as any[] | undefined)?.find((m) => m.Expression)?.Expression,
    metrics: p.Metrics
      ? (p.Metrics as any[])
          .filter((m) => m.MetricStat)
          .map((m) => ({
            id: m.Id,
            namespace: m.MetricStat.Metric.Namespace,
            metricName: m.MetricStat.Metric.MetricName,
            dimensions: m.MetricStat.Metric.Dimensions,
            stat: m.MetricStat.Stat,
            period: m.MetricStat.Period,
          }))
      : [{ namespace: p.Namespace, metricName: p.MetricName, dimensions: p.Dimensions, stat: p.Statistic, period: p.Period }],
  }));
/** The alarms on one metric of one resource (by the dimension's value). */
export const alarmsOn = (template: Template, metricName: string, dimensionValue: unknown) =>
  alarmViews(template).filter((a) =>
    a.metrics.some((m) => m.metricName === metricName && JSON.stringify(m.dimensions).includes(JSON.stringify(dimensionValue))),
  );
