import { DeleteCommand, NumberValue, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { indexes, keys } from '#lib/db/keys';
import { putIfAbsent } from '#lib/db/writes';
import { ltvPartsFromOrders } from '#lib/customers/figures';
import { ltvPartAmounts, otherLtvCurrencies, type LtvPart } from '#lib/customers/model';
import { indexedMetadata, readLtvParts } from '#lib/customers/store';

/** What repairing one customer wrote, summed into `ops metrics rebuild`'s report. */
export type CustomerRepair = { ltv_parts_written: number; search_keys_added: number; index_entries_added: number };

/** Puts the customer's LTV parts its orders make where the stored ones differ, and deletes those no order makes: how many. */
const repairLtvParts = async (merchantId: string, reportingCurrency: string, customerId: number): Promise<number> => {
  const [want, have] = await Promise.all([
    ltvPartsFromOrders(merchantId, reportingCurrency, customerId),
    readLtvParts(merchantId, customerId),
  ]);
  const idOf = (p: LtvPart) => `${p.currency}#${p.year}`;
  const stored = new Map(have.map((p) => [idOf(p), p]));
  let written = 0;
  for (const part of want) {
    const was = stored.get(idOf(part));
    stored.delete(idOf(part));
    if (was && JSON.stringify(ltvPartAmounts(was)) === JSON.stringify(ltvPartAmounts(part))) continue;
    const amounts = Object.fromEntries(ltvPartAmounts(part).map(([attr, v]) => [attr, NumberValue.from(v)]));
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.customerLtvPart(merchantId, customerId, part.currency, part.year),
          currency: part.currency,
          year: part.year,
          ...amounts,
        },
      }),
    );
    written += 1;
  }
  for (const stray of stored.values()) {
    await db().send(
      new DeleteCommand({ TableName: tableName(), Key: keys.customerLtvPart(merchantId, customerId, stray.currency, stray.year) }),
    );
    written += 1;
  }
  return written;
};

/**
 * Brings one customer's own items up to the present shapes, for `ops metrics rebuild` (idempotent):
 * its LTV parts as its paid orders in other currencies make them (orders paid before parts existed),
 * its metadata index entries (customers written before that index; deleted ones too, their lines
 * still count), and a live customer's search keys (written before the search index, gsi4).
 */
export const repairCustomer = async (
  merchantId: string,
  reportingCurrency: string,
  customer: Record<string, unknown>,
): Promise<CustomerRepair> => {
  const id = Number(customer.id);
  const done: CustomerRepair = { ltv_parts_written: 0, search_keys_added: 0, index_entries_added: 0 };
  if (otherLtvCurrencies(customer, reportingCurrency).length)
    done.ltv_parts_written = await repairLtvParts(merchantId, reportingCurrency, id);
  const entries = await Promise.all(
    indexedMetadata(customer.metadata).map(([k, v]) => putIfAbsent({ ...keys.customerMetadata(merchantId, k, v, id), customer_id: id })),
  );
  done.index_entries_added = entries.filter(Boolean).length;
  if (!customer.deleted_at && !customer.gsi4pk) {
    const search = indexes.customerSearch(merchantId, String(customer.created_at), id);
    done.search_keys_added = await db()
      .send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.customer(merchantId, id),
          UpdateExpression: 'SET gsi4pk = :pk, gsi4sk = :sk',
          // Still live and still without the keys (a delete or a newer write decides otherwise).
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at) AND attribute_not_exists(gsi4pk)',
          ExpressionAttributeValues: { ':pk': search.gsi4pk, ':sk': search.gsi4sk },
        }),
      )
      .then(
        () => 1,
        (err: Error) => {
          if (err.name !== 'ConditionalCheckFailedException') throw err;
          return 0;
        },
      );
  }
  return done;
};
