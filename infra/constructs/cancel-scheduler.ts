import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventField, Rule, RuleTargetInput, type IEventBus } from 'aws-cdk-lib/aws-events';
import { SfnStateMachine } from 'aws-cdk-lib/aws-events-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import {
  Choice,
  Condition,
  DefinitionBody,
  JsonPath,
  StateMachine,
  Succeed,
  TaskInput,
  Wait,
  WaitTime,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke, StepFunctionsStartExecution } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { CANCEL_CHECK_HANDLER } from '../paths.ts';
import { RENEWAL_EVENT } from '#lib/outbox/store';
import { ApiFunction, CUSTOMER_PK_PATTERN, SERVICE_NAME } from './api-function.ts';

/**
 * Subscription bus events that carry a scheduled cancellation (`cancel_at` a string, not null):
 * a schedule set, replaced, or carried along by another change. Each arms one wait; a wait whose
 * schedule was replaced or cleared finds nothing to apply.
 */
export const CANCEL_SCHEDULE_PATTERN = {
  source: [SERVICE_NAME],
  'detail-type': [{ prefix: 'subscription.' }],
  detail: { data: { object: { cancel_at: [{ prefix: '' }] } } },
};

/**
 * The other scheduled changes (lib/subscriptions/schedule.ts, `SCHEDULE_FIELDS`): a trialing
 * subscription's conversion at `trial_ends_at`, a past-due one's delinquent cancellation (armed
 * with `failed_at`; the check works out its time from the merchant's `delinquency_days`). One rule
 * each, into the same state machine, with the kind in the input.
 */
export const SCHEDULE_RULES = [
  { id: 'Rule', pattern: CANCEL_SCHEDULE_PATTERN, field: 'cancel_at', kind: null },
  {
    id: 'TrialRule',
    pattern: {
      source: [SERVICE_NAME],
      'detail-type': [{ prefix: 'subscription.' }],
      detail: { data: { object: { status: ['trialing'], trial_ends_at: [{ prefix: '' }] } } },
    },
    field: 'trial_ends_at',
    kind: 'convert',
  },
  {
    id: 'PastDueRule',
    pattern: {
      source: [SERVICE_NAME],
      'detail-type': [{ prefix: 'subscription.' }],
      detail: { data: { object: { status: ['past_due'], failed_at: [{ prefix: '' }] } } },
    },
    field: 'failed_at',
    kind: 'delinquent',
  },
  {
    // A customer's renewal grace (an internal event, never a webhook): armed with its end.
    id: 'RenewalRule',
    pattern: {
      source: [SERVICE_NAME],
      'detail-type': [RENEWAL_EVENT],
      detail: { data: { object: { grace_ends_at: [{ prefix: '' }] } } },
    },
    field: 'grace_ends_at',
    kind: 'renewal',
  },
] as const;

type CancelSchedulerProps = {
  eventBus: IEventBus;
  table: ITable;
  projectRoot: string;
  stage: string;
  environment?: Record<string, string>;
};

/**
 * Scheduled changes on AWS (lib/subscriptions/schedule.ts is the code): cancellations, trial
 * conversions, delinquent cancellations.
 *
 *   bus ─rules─▶ state machine: check ─▶ wait until wake_at ─▶ check (applies it) ─▶ done
 *
 * The check function applies a due change or answers when to look again; a wait longer than one
 * execution may last (a year) ends by starting a fresh execution with the same input. Each rule
 * retries for 24 hours and parks what it could not start in the dead-letter queue.
 */
export class CancelScheduler extends Construct {
  readonly rule: Rule;
  readonly rules: Rule[];
  readonly stateMachine: StateMachine;
  readonly checkFunction: ApiFunction;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: CancelSchedulerProps) {
    super(scope, id);
    // The subscription change path: BatchGetItem/GetItem reads, the chunks of a long MRR timeline
    // (Query of the customer's partition), one TransactWriteItems (puts, updates, deletes, checks).
    this.checkFunction = new ApiFunction(this, 'CheckFunction', {
      projectRoot: props.projectRoot,
      handlerPath: CANCEL_CHECK_HANDLER,
      description: `scheduled cancellation: apply when due (${CANCEL_CHECK_HANDLER})`,
      timeout: Duration.seconds(30),
      environment: props.environment,
    }).grantTableActions(props.table, {
      table: ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'],
      keyed: [{ action: 'Query', leadingKeys: [CUSTOMER_PK_PATTERN] }],
    });

    const stateMachineName = `${SERVICE_NAME}-${props.stage}-cancel-scheduler`;
    const selfArn = Stack.of(this).formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    // The execution's input as it came (with `kind`, or without it as armed before there were kinds).
    const input = TaskInput.fromJsonPathAt('$');

    const check = (name: string) =>
      new LambdaInvoke(this, name, {
        lambdaFunction: this.checkFunction,
        payload: input,
        payloadResponseOnly: true,
        resultPath: '$.check',
      }).addRetry({ errors: ['States.ALL'], interval: Duration.seconds(2), backoffRate: 2, maxAttempts: 8, maxDelay: Duration.minutes(2) });
    const done = new Succeed(this, 'Done');
    // Fire and forget: the fresh execution carries the same schedule on (by name, not by reference: a machine cannot name itself).
    const restart = new StepFunctionsStartExecution(this, 'StartFreshWait', {
      stateMachine: StateMachine.fromStateMachineArn(this, 'Self', selfArn),
      input,
      resultPath: JsonPath.DISCARD,
    }).next(done);
    const first = check('Check');
    const again = check('CheckAgain');
    const decide = (name: string) =>
      new Choice(this, name)
        .when(Condition.booleanEquals('$.check.due', true), done)
        .when(
          Condition.booleanEquals('$.check.far', true),
          new Wait(this, `${name}WaitLong`, { time: WaitTime.timestampPath('$.check.wake_at') }).next(restart),
        )
        .otherwise(new Wait(this, `${name}Wait`, { time: WaitTime.timestampPath('$.check.wake_at') }).next(again));
    const definition = first.next(decide('Decide'));
    again.next(decide('DecideAgain'));

    // Traced; no execution logs (their delivery needs wildcard log permissions): the check function logs each decision.
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineName,
      definitionBody: DefinitionBody.fromChainable(definition),
      tracingEnabled: true,
    });

    this.deadLetterQueue = new Queue(this, 'RuleDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.rules = SCHEDULE_RULES.map(({ id, pattern, field, kind }) => {
      const rule = new Rule(this, id, {
        description:
          kind === 'renewal'
            ? 'Renewal graces of recurring orders → the scheduler'
            : `Subscription events carrying a scheduled ${kind ?? 'cancellation'} → the scheduler`,
        eventBus: props.eventBus,
        eventPattern: { source: [...pattern.source], detailType: pattern['detail-type'] as never, detail: pattern.detail },
      });
      rule.addTarget(
        new SfnStateMachine(this.stateMachine, {
          input: RuleTargetInput.fromObject({
            merchant_id: EventField.fromPath('$.detail.merchant_id'),
            ...(kind === 'renewal'
              ? { customer_id: EventField.fromPath('$.detail.data.object.customer_id') }
              : { subscription_id: EventField.fromPath('$.detail.data.object.id') }),
            cancel_at: EventField.fromPath(`$.detail.data.object.${field}`),
            ...(kind ? { kind } : {}),
          }),
          deadLetterQueue: this.deadLetterQueue,
          retryAttempts: 185,
          maxEventAge: Duration.hours(24),
        }),
      );
      return rule;
    });
    this.rule = this.rules[0];
  }
}
