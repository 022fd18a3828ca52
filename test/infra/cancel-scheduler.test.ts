import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_SCHEDULE_PATTERN } from '../../infra/constructs/cancel-scheduler.ts';
import { CANCEL_CHECK_HANDLER } from '../../infra/paths.ts';
import { alarmsOn, fixtureProjectRoot, idOf, resources, roleGrants, synthStack } from './support/stack.ts';

/** The cancellation scheduler's AWS resources (infra/constructs/cancel-scheduler.ts) in the stack's template. */
let fixture: ReturnType<typeof fixtureProjectRoot>;
let synthesized: ReturnType<typeof synthStack>;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  synthesized = synthStack(fixture.root);
});
afterAll(() => fixture.remove());

/** The state machine's definition, with its Fn::Join of literal parts and references read back as JSON. */
const definition = () => {
  const { stack, template } = synthesized;
  const machine = resources(template, 'AWS::StepFunctions::StateMachine')[idOf(stack, stack.cancelScheduler.stateMachine)];
  const parts = machine.Properties.DefinitionString['Fn::Join'][1] as unknown[];
  return JSON.parse(parts.map((p) => (typeof p === 'string' ? p : `REF`)).join('')) as { StartAt: string; States: Record<string, any> };
};

describe('cancellation scheduler', () => {
  it('a rule on the bus sends subscription events that carry a cancel_at to the state machine, retrying 24 h, then its dead-letter queue', () => {
    const { stack, template } = synthesized;
    const s = stack.cancelScheduler;
    const rule = resources(template, 'AWS::Events::Rule')[idOf(stack, s.rule)];
    expect(rule.Properties.EventBusName).toEqual({ Ref: idOf(stack, stack.eventBus) });
    expect(rule.Properties.EventPattern).toEqual(CANCEL_SCHEDULE_PATTERN);
    expect(CANCEL_SCHEDULE_PATTERN).toEqual({
      source: ['revenue-analytics-api'],
      'detail-type': [{ prefix: 'subscription.' }],
      detail: { data: { object: { cancel_at: [{ prefix: '' }] } } },
    });
    const [target] = rule.Properties.Targets;
    expect(target.Arn).toEqual({ Ref: idOf(stack, s.stateMachine) });
    expect(target.RetryPolicy).toEqual({ MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 });
    expect(target.DeadLetterConfig.Arn).toEqual({ 'Fn::GetAtt': [idOf(stack, s.deadLetterQueue), 'Arn'] });
    // A message in it alarms (docs/operations.md has the runbook).
    const [alarm] = alarmsOn(template, 'ApproximateNumberOfMessagesVisible', {
      'Fn::GetAtt': [idOf(stack, s.deadLetterQueue), 'QueueName'],
    });
    expect(alarm).toMatchObject({ threshold: 0, comparison: 'GreaterThanThreshold' });
    expect(alarm.description).toMatch(/scheduled cancellation/);
    expect(JSON.parse(target.InputTransformer.InputTemplate.replace(/<([\w-]+)>/g, '"$1"'))).toEqual({
      merchant_id: 'detail-merchant_id',
      subscription_id: 'detail-data-object-id',
      cancel_at: 'detail-data-object-cancel_at',
    });
  });

  it('the state machine checks, waits until wake_at, checks again (which applies it), and restarts itself for a wait past a year', () => {
    const { StartAt, States } = definition();
    expect(StartAt).toBe('Check');
    expect(States.Check).toMatchObject({ Type: 'Task', ResultPath: '$.check', Next: 'Decide' });
    // The function's own failures (throttled, busy) are retried as well as Lambda's.
    expect(States.Check.Retry).toContainEqual(expect.objectContaining({ ErrorEquals: ['States.ALL'], MaxAttempts: 8 }));
    const choices = States.Decide.Choices as { Variable: string; BooleanEquals: boolean; Next: string }[];
    expect(choices.map((c) => [c.Variable, c.BooleanEquals, c.Next])).toEqual([
      ['$.check.due', true, 'Done'],
      ['$.check.far', true, 'DecideWaitLong'],
    ]);
    expect(States[States.Decide.Default]).toMatchObject({ Type: 'Wait', TimestampPath: '$.check.wake_at', Next: 'CheckAgain' });
    expect(States.CheckAgain.Next).toBe('DecideAgain');
    expect(States.DecideWaitLong).toMatchObject({ Type: 'Wait', TimestampPath: '$.check.wake_at', Next: 'StartFreshWait' });
    expect(States.StartFreshWait).toMatchObject({ Type: 'Task', Resource: expect.stringContaining('states:startExecution'), Next: 'Done' });
  });

  // What it may do is proven by use (test/support/iam-check.ts); the ceiling: the table only, no
  // scan, no batch write, and its one Query keyed to customer partitions (a long timeline's chunks).
  it(`the check function (${CANCEL_CHECK_HANDLER}) acts on the table only: no Scan or BatchWriteItem, Query on customer partitions only`, () => {
    const { stack, template } = synthesized;
    const table = { 'Fn::GetAtt': [idOf(stack, stack.table), 'Arn'] };
    const grants = roleGrants(stack, template, stack.cancelScheduler.checkFunction).filter((g) => g.action.startsWith('dynamodb:'));
    for (const g of grants) expect(g.resource).toEqual(table);
    expect(grants.filter((g) => ['dynamodb:Scan', 'dynamodb:BatchWriteItem'].includes(g.action))).toEqual([]);
    expect(grants.filter((g) => g.action === 'dynamodb:Query').map((g) => g.condition)).toEqual([
      { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`M#mer_${'?'.repeat(20)}#CUSTOMER#*`] } },
    ]);
  });
});
