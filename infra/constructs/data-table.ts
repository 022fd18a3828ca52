import { RemovalPolicy } from 'aws-cdk-lib';
import {
  type AttributeType,
  type BillingMode,
  type ProjectionType,
  type StreamViewType,
  Table,
  TableEncryption,
  type Attribute,
} from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { createTableInput, GSIS, TABLE_KEYS, TTL_ATTRIBUTE } from '#lib/db/table';

export type DataTableProps = {
  /**
   * Keep the table and its key when the stack (or they) are deleted, and turn on the table's
   * deletion protection. True unless told otherwise: the table holds the merchants' data.
   */
  retain?: boolean;
};

/**
 * The single table, built from the same definition DynamoDB Local gets (lib/db/table.ts), with
 * point-in-time recovery, TTL, the stream, and encryption under a customer-managed KMS key of its
 * own (rotated yearly; the functions' grants on it are added with their table grants).
 */
export class DataTable extends Table {
  constructor(scope: Construct, id: string, props: DataTableProps = {}) {
    const retain = props.retain ?? true;
    const removalPolicy = retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const shape = createTableInput('unused');
    const attribute = (name: string): Attribute => {
      const def = shape.AttributeDefinitions.find((a) => a.AttributeName === name);
      if (!def) throw new Error(`lib/db/table.ts defines no attribute ${name}`);
      return { name, type: def.AttributeType as AttributeType };
    };
    // A sibling: `this` cannot be used before super(). The data is unreadable without it, so it is kept as long as the table.
    const encryptionKey = new Key(scope, `${id}Key`, {
      description: 'Encrypts the revenue analytics table, its indexes, stream and backups',
      enableKeyRotation: true,
      removalPolicy,
    });
    super(scope, id, {
      partitionKey: attribute(TABLE_KEYS.partitionKey),
      sortKey: attribute(TABLE_KEYS.sortKey),
      billingMode: shape.BillingMode as BillingMode,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      stream: shape.StreamSpecification.StreamViewType as StreamViewType,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey,
      deletionProtection: retain,
      removalPolicy,
    });
    for (const index of shape.GlobalSecondaryIndexes) {
      const gsi = GSIS.find((g) => g.indexName === index.IndexName)!;
      this.addGlobalSecondaryIndex({
        indexName: gsi.indexName,
        partitionKey: attribute(gsi.partitionKey),
        sortKey: attribute(gsi.sortKey),
        projectionType: index.Projection.ProjectionType as ProjectionType,
        ...('NonKeyAttributes' in index.Projection ? { nonKeyAttributes: index.Projection.NonKeyAttributes } : {}),
      });
    }
  }
}
