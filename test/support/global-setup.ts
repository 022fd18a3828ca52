import { ensureTable, freePort, startDynamoDbLocal } from '../../infra/local/dynamodb.ts';

/** One DynamoDB Local for the whole run; test files isolate themselves by merchant. */
export default async function setup() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const tableName = 'revenue-analytics-test';
  const dynamo = await startDynamoDbLocal({ port: await freePort() });
  await ensureTable(dynamo.endpoint, tableName);
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  process.env.TABLE_NAME = tableName;
  return () => dynamo.stop();
}
