import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTable, freePort, startDynamoDbLocal } from '../../infra/local/dynamodb.ts';
import { writePolicies } from './iam/policies.ts';

/**
 * One DynamoDB Local for the whole run; test files isolate themselves by merchant. The shared table
 * has no stream: no poller reads it (a file that runs the outbox poller writes into a table of its
 * own), and DynamoDB Local's GetRecords on any stream slows with every stream record of the whole
 * database (measured: 18 ms with none, 56 ms with 20,000, 126 ms with 60,000). With the shared
 * table's writes on a stream, a poller polling every 50 ms late in the run kept DynamoDB Local busy
 * and every other file's requests waited behind it.
 */
/** What the synthesized policies depend on: the stack's and the functions' sources and the dependencies. */
const SYNTH_INPUTS = ['infra', 'lib', 'functions', 'test/infra/support', 'test/support/iam', 'package-lock.json', 'cdk.json'];
const sourcesHash = (): string => {
  const hash = createHash('sha256');
  for (const input of SYNTH_INPUTS) {
    if (!existsSync(input)) continue;
    const files = input.includes('.')
      ? [input]
      : readdirSync(input, { recursive: true, encoding: 'utf8' })
          .map((f) => join(input, f))
          .filter((f) => /\.(ts|mts|mjs|js|json)$/.test(f))
          .sort();
    for (const f of files) hash.update(f).update('\0').update(readFileSync(f)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
};

export default async function setup() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const tableName = 'revenue-analytics-test';
  const dynamo = await startDynamoDbLocal({ port: await freePort() });
  await ensureTable(dynamo.endpoint, tableName, { stream: false });
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  process.env.TABLE_NAME = tableName;
  // Every function's IAM policy, from one synth of the stack, for test/support/iam-check.ts. The
  // tiers run each file in a vitest run of its own: one synth serves every run of the same sources.
  const policies = join(tmpdir(), `ras-iam-policies-${sourcesHash()}.json`);
  if (!existsSync(policies)) {
    const written = `${policies}.${process.pid}`;
    writePolicies(written);
    renameSync(written, policies);
  }
  process.env.IAM_POLICIES_FILE = policies;
  return () => dynamo.stop();
}
