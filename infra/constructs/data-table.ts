import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, type Attribute } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { createTableInput, GSIS, TABLE_KEYS, TTL_ATTRIBUTE } from '#lib/db/table';

export type DataTableProps = {
  /** RETAIN unless told otherwise: the table holds the merchants' data. */
  removalPolicy?: RemovalPolicy;
};

/** The single table, built from the same definition DynamoDB Local gets (lib/db/table.ts). */
export class DataTable extends Table {
  constructor(scope: Construct, id: string, props: DataTableProps = {}) {
    const shape = createTableInput('unused');
    const attribute = (name: string): Attribute => {
      const def = shape.AttributeDefinitions.find((a) => a.AttributeName === name);
      if (!def) throw new Error(`lib/db/table.ts defines no attribute ${name}`);
      return { name, type: def.AttributeType as AttributeType };
    };
    super(scope, id, {
      partitionKey: attribute(TABLE_KEYS.partitionKey),
      sortKey: attribute(TABLE_KEYS.sortKey),
      billingMode: shape.BillingMode as BillingMode,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      stream: shape.StreamSpecification.StreamViewType as StreamViewType,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    for (const index of shape.GlobalSecondaryIndexes) {
      const gsi = GSIS.find((g) => g.indexName === index.IndexName)!;
      this.addGlobalSecondaryIndex({
        indexName: gsi.indexName,
        partitionKey: attribute(gsi.partitionKey),
        sortKey: attribute(gsi.sortKey),
        projectionType: index.Projection.ProjectionType as ProjectionType,
      });
    }
  }
}
