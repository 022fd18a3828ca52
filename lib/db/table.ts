/**
 * The single table's physical shape, shared by the CDK stack, the local stack and the tests.
 * Item keys are built in `keys.ts`.
 */
export const TABLE_KEYS = { partitionKey: 'pk', sortKey: 'sk' } as const;
export const TTL_ATTRIBUTE = 'expires_at';

type IndexDefinition = {
  indexName: string;
  partitionKey: string;
  sortKey: string;
  /** Only these attributes (besides the keys) are copied into the index; absent: every attribute. */
  nonKeyAttributes?: readonly string[];
};

export const GSIS = [
  { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
  { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
  { indexName: 'gsi3', partitionKey: 'gsi3pk', sortKey: 'gsi3sk' },
  // Customer search reads every live customer: an index of id, email and name keeps each row
  // read (and its read capacity on AWS, which a ProjectionExpression does not lower) small.
  { indexName: 'gsi4', partitionKey: 'gsi4pk', sortKey: 'gsi4sk', nonKeyAttributes: ['id', 'email', 'name'] },
] as const satisfies readonly IndexDefinition[];

/** An index's projection as CreateTable and CDK take it. */
export const projectionOf = (g: IndexDefinition) =>
  g.nonKeyAttributes
    ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...g.nonKeyAttributes] }
    : { ProjectionType: 'ALL' as const };

export type IndexName = (typeof GSIS)[number]['indexName'];

/** CreateTable input for DynamoDB Local (on AWS the CDK stack creates the same table). */
export const createTableInput = (tableName: string) => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST' as const,
  AttributeDefinitions: [
    { AttributeName: TABLE_KEYS.partitionKey, AttributeType: 'S' as const },
    { AttributeName: TABLE_KEYS.sortKey, AttributeType: 'S' as const },
    ...GSIS.flatMap((g) => [
      { AttributeName: g.partitionKey, AttributeType: 'S' as const },
      { AttributeName: g.sortKey, AttributeType: 'S' as const },
    ]),
  ],
  KeySchema: [
    { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' as const },
    { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' as const },
  ],
  GlobalSecondaryIndexes: GSIS.map((g) => ({
    IndexName: g.indexName,
    KeySchema: [
      { AttributeName: g.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: g.sortKey, KeyType: 'RANGE' as const },
    ],
    Projection: projectionOf(g),
  })),
  StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' as const },
});
