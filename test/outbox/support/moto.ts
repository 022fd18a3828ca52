import { spawn, spawnSync } from 'node:child_process';
import { PutRuleCommand, PutTargetsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { freePort } from '../../../infra/local/dynamodb.ts';

/**
 * moto_server (Python moto 5) as the EventBridge and SQS emulator of the tests: started on a free
 * 127.0.0.1 port by the test file that needs it, stopped in its afterAll. `.ci/run` installs it.
 */
export const motoInstalled = (): boolean => spawnSync('moto_server', ['--help'], { stdio: 'ignore' }).status === 0;

export const startMoto = async () => {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4_000)));
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
      child.once('exit', () => {
        clearTimeout(force);
        done();
      });
      child.kill('SIGTERM');
    });
  for (const until = Date.now() + 30_000; ; ) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`);
    try {
      if ((await fetch(`${endpoint}/moto-api/`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`moto_server did not answer on ${endpoint}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { endpoint, stop };
};

/**
 * SQS through its JSON protocol (the project has no SQS client): moto picks the service from the
 * credential scope of the Authorization header, and checks no signature.
 */
export const sqsClient =
  (endpoint: string) =>
  async <T = any>(action: string, input: Record<string, unknown>): Promise<T> => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `AmazonSQS.${action}`,
        authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: JSON.stringify(input),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`SQS ${action}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  };

/**
 * A rule on `bus` sending the events that match `pattern` to a queue, with the queue policy that
 * lets the rule (EventBridge, `aws:SourceArn`) send to it as on AWS.
 */
export const ruleToQueue = async (
  eventBridge: EventBridgeClient,
  sqs: ReturnType<typeof sqsClient>,
  opts: { bus: string; rule: string; pattern: object; queueUrl: string },
) => {
  const { Attributes } = await sqs<{ Attributes: { QueueArn: string } }>('GetQueueAttributes', {
    QueueUrl: opts.queueUrl,
    AttributeNames: ['QueueArn'],
  });
  const rule = await eventBridge.send(
    new PutRuleCommand({ Name: opts.rule, EventBusName: opts.bus, EventPattern: JSON.stringify(opts.pattern) }),
  );
  await sqs('SetQueueAttributes', {
    QueueUrl: opts.queueUrl,
    Attributes: {
      Policy: JSON.stringify({
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: Attributes.QueueArn,
            Condition: { ArnEquals: { 'aws:SourceArn': rule.RuleArn } },
          },
        ],
      }),
    },
  });
  await eventBridge.send(
    new PutTargetsCommand({ Rule: opts.rule, EventBusName: opts.bus, Targets: [{ Id: 'queue', Arn: Attributes.QueueArn }] }),
  );
  return { ruleArn: rule.RuleArn!, queueArn: Attributes.QueueArn };
};
