import { now } from '#lib/clock';
import { TTL_ATTRIBUTE } from '#lib/db/table';

/** Now in epoch seconds, from the injectable clock: the unit the table's TTL attribute holds. */
export const epochSeconds = (): number => Math.floor(now().getTime() / 1000);

/** The TTL attribute of an item that expires `seconds` from now. */
export const expiresIn = (seconds: number) => ({ [TTL_ATTRIBUTE]: epochSeconds() + seconds });

/** Whether an item has not expired yet: DynamoDB deletes expired items only within days, so readers check. */
export const isUnexpired = (item: Record<string, unknown>): boolean => Number(item[TTL_ATTRIBUTE]) > epochSeconds();
