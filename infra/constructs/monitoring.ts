import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { ComparisonOperator, MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { DefaultDashboardFactory, MetricStatistic, MonitoringFacade, SnsAlarmActionStrategy } from 'cdk-monitoring-constructs';
import { Construct } from 'constructs';
import { SERVICE_NAME, type ApiFunction } from './api-function.ts';
import type { OutboxRelay } from './outbox-relay.ts';
import type { PendingMovesApplier } from './pending-moves-applier.ts';
import type { RecountWorker } from './recount-worker.ts';
import { WEBHOOK_RULE_NAME, type WebhookDelivery } from './webhook-delivery.ts';
import type { CancelScheduler } from './cancel-scheduler.ts';

/**
 * The thresholds, in one place (docs/operations.md). Counts alarm above the figure: 0 means
 * "any". Every alarm evaluates 1-minute periods.
 */
export const ALARM_THRESHOLDS = {
  /** Share of API requests answered 5xx (docs/api-conventions.md: a 5xx is a defect), over 5 minutes. */
  api5xxRate: 0.01,
  /** Lambda `Errors` (crashes, timeouts: the pipeline turns handled errors into responses) per minute. */
  functionErrors: 0,
  /** Lambda `Throttles` per minute: account concurrency exhausted. */
  functionThrottles: 0,
  /** Messages in a dead-letter queue. */
  deadLetters: 0,
  /** How far the outbox relay is behind the table stream. */
  relayIteratorAgeMs: 5 * 60 * 1000,
  /** How far the pending-moves applier is behind the table stream (it applies within seconds). */
  pendingMovesIteratorAgeMs: 5 * 60 * 1000,
  /** Oldest webhook event waiting for the fan-out. */
  webhookEventAgeSeconds: 5 * 60,
  /** DynamoDB throttled requests per minute (on-demand tables throttle only past their peaks). */
  tableThrottledEvents: 0,
} as const;

export type ApiMonitoringProps = {
  stage: string;
  api: HttpApi;
  /** Stage name of the API's metrics (`$default`). */
  apiStageName: string;
  /** Route functions and the 404 function. */
  apiFunctions: ApiFunction[];
  outboxRelay: OutboxRelay;
  pendingMovesApplier: PendingMovesApplier;
  recountWorker: RecountWorker;
  webhookDelivery: WebhookDelivery;
  cancelScheduler: CancelScheduler;
  table: ITable;
  eventBus: IEventBus;
  /** POWERTOOLS_METRICS_NAMESPACE of the functions (their EMF metrics). */
  metricsNamespace: string;
};

/**
 * Every alarm of the stack and its dashboard, on one cdk-monitoring-constructs facade: alarms go
 * to one SNS topic (subscribe the on-call there), the dashboard `revenue-analytics-api-<stage>`
 * shows the API, each function, the table, the queues and the functions' own metrics.
 */
export class ApiMonitoring extends Construct {
  readonly alarmTopic: Topic;
  readonly facade: MonitoringFacade;

  constructor(scope: Construct, id: string, props: ApiMonitoringProps) {
    super(scope, id);
    const name = `revenue-analytics-api-${props.stage}`;
    // SNS encryption needs a customer-managed key: CloudWatch cannot use the AWS-managed SNS key.
    const topicKey = new Key(this, 'AlarmTopicKey', { description: `Encrypts the ${name} alarm topic`, enableKeyRotation: true });
    topicKey.grant(new ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey');
    this.alarmTopic = new Topic(this, 'AlarmTopic', {
      topicName: `${name}-alarms`,
      displayName: `${name} alarms`,
      masterKey: topicKey,
      enforceSSL: true,
    });

    this.facade = new MonitoringFacade(this, 'Facade', {
      alarmFactoryDefaults: {
        alarmNamePrefix: name,
        actionsEnabled: true,
        action: new SnsAlarmActionStrategy({ onAlarmTopic: this.alarmTopic }),
        datapointsToAlarm: 1,
        evaluationPeriods: 1,
      },
      metricFactoryDefaults: { period: Duration.minutes(1) },
      dashboardFactory: new DefaultDashboardFactory(this, 'Dashboards', {
        dashboardNamePrefix: name,
        createDashboard: true,
        createSummaryDashboard: false,
        createAlarmDashboard: false,
      }),
    });
    const t = ALARM_THRESHOLDS;
    const critical = <T>(threshold: T) => ({ Critical: threshold });

    this.facade
      .addLargeHeader(`Revenue analytics API (${props.stage})`)
      .monitorApiGatewayV2HttpApi({
        api: props.api,
        apiStage: props.apiStageName,
        humanReadableName: 'HTTP API',
        alarmFriendlyName: 'Api',
        add5xxRateAlarm: critical({ maxErrorRate: t.api5xxRate, period: Duration.minutes(5) }),
      })
      .monitorCustom({
        humanReadableName: 'Application metrics (Powertools EMF)',
        alarmFriendlyName: 'AppMetrics',
        // A search, so the dashboard shows whatever the pipeline emits without naming each metric here.
        metricGroups: [
          {
            title: 'Requests, errors, replays, conflicts, DynamoDB requests (sum per minute)',
            metrics: [
              {
                searchQuery: '',
                namespace: props.metricsNamespace,
                dimensionsMap: { service: SERVICE_NAME },
                statistic: MetricStatistic.SUM,
              },
            ],
          },
        ],
      })
      .monitorDynamoTable({
        table: props.table,
        humanReadableName: 'Table',
        alarmFriendlyName: 'Table',
        addReadThrottledEventsCountAlarm: critical({ maxThrottledEventsThreshold: t.tableThrottledEvents }),
        addWriteThrottledEventsCountAlarm: critical({ maxThrottledEventsThreshold: t.tableThrottledEvents }),
      });

    /**
     * A consumer of the table's stream: errors, throttles and lag (iterator age, alarmed when
     * `lag` is given) of its function, depth of its dead-letter queue.
     */
    const streamConsumer = (c: {
      fn: ApiFunction;
      deadLetterQueue: IQueue;
      name: string;
      alarmName: string;
      deadLettersAlarmName: string;
      lag?: { maxAgeInMillis: number; description: string };
      deadLettersDescription: string;
    }) =>
      this.facade
        .monitorLambdaFunction({
          lambdaFunction: c.fn,
          humanReadableName: c.name,
          alarmFriendlyName: c.alarmName,
          isIterator: true,
          addFaultCountAlarm: critical({ maxErrorCount: t.functionErrors }),
          addThrottlesCountAlarm: critical({ maxErrorCount: t.functionThrottles }),
          ...(c.lag
            ? { addMaxIteratorAgeAlarm: critical({ maxAgeInMillis: c.lag.maxAgeInMillis, alarmDescriptionOverride: c.lag.description }) }
            : {}),
        })
        .monitorSqsQueue({
          queue: c.deadLetterQueue,
          humanReadableName: `${c.name} dead letters`,
          alarmFriendlyName: c.deadLettersAlarmName,
          addQueueMaxSizeAlarm: critical({ maxMessageCount: t.deadLetters, alarmDescriptionOverride: c.deadLettersDescription }),
        });

    const relay = props.outboxRelay;
    const webhooks = props.webhookDelivery;
    this.facade.addLargeHeader('Events: outbox relay and webhook delivery');
    streamConsumer({
      fn: relay.function,
      deadLetterQueue: relay.deadLetterQueue,
      name: 'Outbox relay',
      alarmName: 'OutboxRelay',
      deadLettersAlarmName: 'OutboxDeadLetters',
      lag: {
        maxAgeInMillis: t.relayIteratorAgeMs,
        description: 'The outbox relay is more than 5 minutes behind the table stream: events are late',
      },
      deadLettersDescription:
        'Outbox records that left the stream before the relay published them (EventBridge down 24 h): the sweeper publishes their events; check it does',
    })
      .monitorSqsQueueWithDlq({
        queue: webhooks.eventsQueue,
        deadLetterQueue: webhooks.eventsDeadLetterQueue,
        humanReadableName: 'Webhook events queue',
        alarmFriendlyName: 'WebhookEvents',
        addQueueMaxMessageAgeAlarm: critical({
          maxAgeInSeconds: t.webhookEventAgeSeconds,
          alarmDescriptionOverride: 'A webhook event has waited more than 5 minutes for the fan-out: deliveries are late',
        }),
        addDeadLetterQueueMaxSizeAlarm: critical({
          maxMessageCount: t.deadLetters,
          alarmDescriptionOverride:
            'Webhook events the fan-out failed 5 times (no delivery task made): fix, then redrive the events dead-letter queue',
        }),
      })
      .monitorSqsQueueWithDlq({
        queue: webhooks.deliveryQueue,
        deadLetterQueue: webhooks.deliveryDeadLetterQueue,
        humanReadableName: 'Webhook deliveries queue',
        alarmFriendlyName: 'WebhookDeliveries',
        addDeadLetterQueueMaxSizeAlarm: critical({
          maxMessageCount: t.deadLetters,
          alarmDescriptionOverride:
            'Webhook deliveries that failed every attempt over 24 hours (reason attribute), or crashed the delivery function 20 times',
        }),
      })
      .monitorSqsQueue({
        queue: webhooks.ruleDeadLetterQueue,
        humanReadableName: 'Webhook rule dead letters',
        alarmFriendlyName: 'WebhookRuleDeadLetters',
        addQueueMaxSizeAlarm: critical({
          maxMessageCount: t.deadLetters,
          alarmDescriptionOverride:
            'EventBridge could not put webhook events on the events queue for 24 hours: they are in the rule dead-letter queue',
        }),
      })
      .monitorCustom({
        humanReadableName: 'Webhook rule',
        alarmFriendlyName: 'WebhookRule',
        metricGroups: [
          {
            title: 'Events the rule failed for good',
            metrics: [
              {
                alarmFriendlyName: 'WebhookRuleFailures',
                metric: ruleFailures(props.eventBus),
                addAlarm: critical({
                  threshold: 1,
                  comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  alarmDescriptionOverride:
                    'The webhook rule failed events for good: neither on the events queue nor in its dead-letter queue (lost: replay from the outbox)',
                }),
              },
            ],
          },
        ],
      });
    const applier = props.pendingMovesApplier;
    this.facade.addLargeHeader('Metrics: pending-moves applier');
    streamConsumer({
      fn: applier.function,
      deadLetterQueue: applier.deadLetterQueue,
      name: 'Pending-moves applier',
      alarmName: 'PendingMovesApplier',
      deadLettersAlarmName: 'PendingMovesDeadLetters',
      lag: {
        maxAgeInMillis: t.pendingMovesIteratorAgeMs,
        description:
          'The pending-moves applier is more than 5 minutes behind the table stream: figures stay exact, but pending items pile up and metrics reads cost more',
      },
      deadLettersDescription:
        'Pending-moves items the applier gave up on: still read in (figures exact); apply them with ops metrics rebuild (docs/operations.md)',
    });
    // No lag alarm: a job may rightly hold its shard for the function's 5 minutes, and one given up
    // on (an hour at most) lands in the dead-letter queue, which is alarmed.
    const recount = props.recountWorker;
    this.facade.addLargeHeader('Metrics: recount worker');
    streamConsumer({
      fn: recount.function,
      deadLetterQueue: recount.deadLetterQueue,
      name: 'Recount worker',
      alarmName: 'RecountWorker',
      deadLettersAlarmName: 'RecountDeadLetters',
      deadLettersDescription:
        'A recount job the worker gave up on: the figures stay those of the settings before the change (answers say Recount-Pending) until the recount is run again (docs/operations.md)',
    });
    this.facade.monitorSqsQueue({
      queue: props.cancelScheduler.deadLetterQueue,
      humanReadableName: 'Scheduled cancellation dead letters',
      alarmFriendlyName: 'CancelSchedulerDeadLetters',
      addQueueMaxSizeAlarm: critical({
        maxMessageCount: t.deadLetters,
        alarmDescriptionOverride:
          'The scheduler could not start a scheduled cancellation for 24 hours: the subscription reads cancelled but its cancel event and webhook wait; redrive the queue (docs/operations.md)',
      }),
    });
    for (const [fn, label] of [
      [relay.sweeper, 'OutboxSweeper'],
      [webhooks.fanOutFunction, 'WebhookFanOut'],
      [webhooks.deliveryFunction, 'WebhookDelivery'],
      [props.cancelScheduler.checkFunction, 'CancelCheck'],
    ] as const) {
      this.facade.monitorLambdaFunction({
        lambdaFunction: fn,
        humanReadableName: label,
        alarmFriendlyName: label,
        isIterator: false,
        addFaultCountAlarm: critical({ maxErrorCount: t.functionErrors }),
        addThrottlesCountAlarm: critical({ maxErrorCount: t.functionThrottles }),
      });
    }

    // Route functions: errors and throttles alarm per group of at most 10 functions (a metric-math
    // alarm's limit), not per function: two alarms for each of ~40 functions would take ~80 of the
    // stack's 500 CloudFormation resources. The description names the group's functions; the
    // dashboard shows each function.
    this.facade.addLargeHeader('API functions');
    const groups = chunks(props.apiFunctions, MAX_METRICS_PER_ALARM);
    groups.forEach((group, index) => {
      const names = group.map((fn) => fn.handlerPath).join(', ');
      // Ids are unique per graph: errors e0…, throttles t0….
      const sum = (metricName: 'Errors' | 'Throttles') =>
        new MathExpression({
          expression: group.map((_, i) => `FILL(${metricName.charAt(0).toLowerCase()}${i}, 0)`).join(' + '),
          usingMetrics: Object.fromEntries(
            group.map((fn, i) => [
              `${metricName.charAt(0).toLowerCase()}${i}`,
              fn.metric(metricName, { statistic: 'Sum', period: Duration.minutes(1) }),
            ]),
          ),
          period: Duration.minutes(1),
          label: `${metricName} (sum of ${group.length} functions)`,
        });
      const anyOf = (metricName: 'Errors' | 'Throttles', threshold: number, what: string) => ({
        alarmFriendlyName: metricName,
        metric: sum(metricName),
        addAlarm: critical({
          threshold,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          alarmDescriptionOverride: `${what} in one of: ${names}`,
        }),
      });
      // One graph per figure with a line per function: the dashboard stays small (its size is the
      // template's and the synth's), every function still visible.
      const perFunction = (title: string, metric: (fn: ApiFunction) => Metric) => ({
        title,
        metrics: group.map((fn) => metric(fn).with({ label: fn.handlerPath, period: Duration.minutes(1) })),
      });
      this.facade.monitorCustom({
        humanReadableName: `API functions, group ${index + 1} of ${groups.length}`,
        alarmFriendlyName: `ApiFunctions${index + 1}`,
        metricGroups: [
          {
            title: 'Errors and throttles (alarmed)',
            metrics: [
              anyOf('Errors', t.functionErrors, 'Lambda errors (crashes, timeouts)'),
              anyOf('Throttles', t.functionThrottles, 'Lambda throttles (account concurrency exhausted)'),
            ],
          },
          perFunction('Invocations', (fn) => fn.metricInvocations({ statistic: 'Sum' })),
          perFunction('Duration p99', (fn) => fn.metricDuration({ statistic: 'p99' })),
          perFunction('Errors', (fn) => fn.metricErrors({ statistic: 'Sum' })),
          perFunction('Concurrent executions', (fn) => fn.metric('ConcurrentExecutions', { statistic: 'Maximum' })),
        ],
      });
    });
  }
}

/** CloudWatch: a metric-math alarm may use at most 10 metrics. */
export const MAX_METRICS_PER_ALARM = 10;
const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/** The webhook rule's failed invocations plus events it could not park (a custom bus's rule metrics carry both dimensions; sent only when not zero). */
const ruleFailures = (eventBus: IEventBus) => {
  const ruleMetric = (metricName: string) =>
    new Metric({
      namespace: 'AWS/Events',
      metricName,
      dimensionsMap: { EventBusName: eventBus.eventBusName, RuleName: WEBHOOK_RULE_NAME },
      period: Duration.minutes(1),
      statistic: 'Sum',
    });
  return new MathExpression({
    expression: 'FILL(failed, 0) + FILL(lost, 0)',
    usingMetrics: { failed: ruleMetric('FailedInvocations'), lost: ruleMetric('InvocationsFailedToBeSentToDlq') },
    period: Duration.minutes(1),
    label: 'failed or lost',
  });
};
