import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { ensureTable, localClientConfig } from '../../infra/local/dynamodb.ts';
import { createTableInput, GSIS } from '#lib/db/table';

const endpoint = process.env.DYNAMODB_ENDPOINT!;
const client = new DynamoDBClient(localClientConfig(endpoint));
const indexesOf = async (name: string) =>
  Object.fromEntries(
    ((await client.send(new DescribeTableCommand({ TableName: name }))).Table!.GlobalSecondaryIndexes ?? []).map((g) => [
      g.IndexName,
      g.Projection,
    ]),
  );

describe('ensureTable (npm start, DATA_DIR)', () => {
  it('creates the table with every index, and adds to a table kept from an earlier version the indexes it lacks', async () => {
    const fresh = `fresh-${randomUUID()}`;
    expect(await ensureTable(endpoint, fresh)).toBe('created');
    expect(Object.keys(await indexesOf(fresh)).sort()).toEqual(GSIS.map((g) => g.indexName));

    // The table as it was before the search index.
    const legacy = `legacy-${randomUUID()}`;
    const full = createTableInput(legacy);
    await client.send(
      new CreateTableCommand({
        ...full,
        AttributeDefinitions: full.AttributeDefinitions.filter((a) => !a.AttributeName.startsWith('gsi4')),
        GlobalSecondaryIndexes: full.GlobalSecondaryIndexes.filter((g) => g.IndexName !== 'gsi4'),
      }),
    );
    expect(await ensureTable(endpoint, legacy)).toBe('exists');
    const indexes = await indexesOf(legacy);
    expect(Object.keys(indexes).sort()).toEqual(GSIS.map((g) => g.indexName));
    expect(indexes.gsi4).toEqual({ ProjectionType: 'INCLUDE', NonKeyAttributes: ['id', 'email', 'name'] });
    expect(await ensureTable(endpoint, legacy)).toBe('exists');
  });
});
