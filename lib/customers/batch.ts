import { NO_SOURCE, openBatchActivity, sourceOf } from '#lib/activity/store';
import { now } from '#lib/clock';
import { keys, type Key } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { commitUnit, runBatch } from '#lib/db/batch';
import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { RecountingError, ThrottledError, UnconfirmedError } from '#lib/errors';
import { issueMessage } from '#lib/shared/validation';
import { batchCollector, identifierOf, type BatchResult } from '#lib/shared/schemas';
import { formatTimestamp } from '#lib/shared/time';
import { customerBatchItem, type CustomerCreate } from '#lib/customers/schemas';
import type { CustomerItem } from '#lib/customers/model';
import {
  EXTERNAL_ID_TAKEN,
  planImport,
  profileChanges,
  type ImportItem as Item,
  type ImportPlan as Plan,
  type OnConflict,
} from '#lib/customers/rules';
import {
  addCustomerCreate,
  addCustomerUpdate,
  batchGet,
  customersByIds,
  getCustomerById,
  customerIdsByEmail,
  takenError,
} from '#lib/customers/store';

export type { OnConflict };

/**
 * POST /customers/batch. Items are validated like POST /customers; the existing email and
 * external_id markers are read in one BatchGetItem, new ids come from one allocation, and the
 * writes go out in as few transactions as fit (≤ 100 actions each). A transaction refused by a
 * concurrent writer is redone item by item, so every item is still classified correctly.
 * Nothing is rolled back; the last transaction also records the import in the activity log.
 */
export const importCustomers = async (
  merchantId: string,
  rawItems: unknown[],
  onConflict: OnConflict,
  request?: Parameters<typeof sourceOf>[0],
): Promise<BatchResult> => {
  const source = request ? sourceOf(request) : NO_SOURCE;
  const results = batchCollector(rawItems.length);
  const at = formatTimestamp(now());
  // The entry's id is taken while the batch reads (awaited before anything is written).
  const opening = openBatchActivity(merchantId, 'customers.batch', source, at);
  opening.catch(() => undefined);
  const failed = (index: number, message: string, identifier: string) => results.failed(index, 'validation_error', message, identifier);
  const skipped = (index: number, identifier: string) => results.skipped(index, 'duplicate_email', identifier);
  const { created, updated } = results;

  // 1. Validate each item.
  const valid: Item[] = [];
  rawItems.forEach((raw, index) => {
    const identifier = identifierOf(raw, 'email');
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      failed(index, `The customers.${index} field must be an object.`, identifier);
      return;
    }
    const parsed = customerBatchItem.safeParse(raw, { reportInput: true });
    if (parsed.success) valid.push({ index, identifier, input: parsed.data });
    else failed(index, issueMessage(parsed.error.issues[0]), identifier);
  });

  // 2. Existing emails and external_ids, in one read.
  const emailKey = (email: string) => keys.customerEmail(merchantId, email);
  const extKey = (ext: string) => keys.customerExternalId(merchantId, ext);
  const markerKeys: Key[] = [
    ...valid.map((v) => emailKey(v.input.email)),
    ...valid.flatMap((v) => (v.input.external_id ? [extKey(v.input.external_id)] : [])),
  ];
  const markers = markerKeys.length ? await batchGet<Key & { customer_id: number }>(markerKeys) : new Map();
  const markerOwner = (key: Key): number | undefined => {
    const m = markers.get(`${key.pk}|${key.sk}`);
    return m ? Number(m.customer_id) : undefined;
  };
  const existing =
    onConflict === 'update'
      ? await customersByIds(
          merchantId,
          valid.flatMap((v) => {
            const id = markerOwner(emailKey(v.input.email));
            return id === undefined ? [] : [id];
          }),
        )
      : new Map<number, CustomerItem>();

  // 3. Plan, in array order (rules: `planImport`).
  const plans = planImport(
    valid,
    onConflict,
    {
      emailOwner: (email) => markerOwner(emailKey(email)),
      externalIdOwner: (ext) => markerOwner(extKey(ext)),
      customer: (id) => existing.get(id),
    },
    { skipped: (v) => skipped(v.index, v.identifier), failed: (v, message) => failed(v.index, message, v.identifier) },
  );

  // 4. New ids in one allocation, in array order.
  const creates = plans.filter((p): p is Extract<Plan, { kind: 'create' }> => p.kind === 'create');
  if (creates.length) {
    const first = (await retrying(() => allocateIds(merchantId, { customer: creates.length }))).customer!;
    creates.forEach((p, i) => (p.id = first + i));
  }

  // 5. Pack, commit and report through the batch engine.
  const outcomes = (plan: Plan, id: number) => {
    const [first, ...rest] = plan.items;
    if (plan.kind === 'create') created(first.index, id, first.identifier);
    else updated(first.index, id, first.identifier);
    for (const v of rest) updated(v.index, id, v.identifier);
  };
  const activity = await opening;
  await runBatch(
    plans,
    {
      write: async (ws, chunk) => {
        for (const plan of chunk) {
          if (plan.kind === 'create') {
            addCustomerCreate(ws, merchantId, plan.id, plan.input, at, plan.input.created_at ?? at);
          } else {
            const changes = profileChanges(plan.current, plan.input);
            if (Object.keys(changes).length) addCustomerUpdate(ws, merchantId, plan.current, changes, at);
          }
        }
        return () => chunk.forEach((plan) => outcomes(plan, plan.kind === 'create' ? plan.id : plan.current.id));
      },
      alone: (plan) => importAlone(merchantId, plan, onConflict, { outcomes, skipped, failed }),
      failed: (plan, err) => {
        if (err instanceof UnconfirmedError) {
          for (const v of plan.items) results.failed(v.index, 'unconfirmed', err.message, v.identifier);
          return;
        }
        const message =
          err instanceof ThrottledError
            ? 'The service was busy; retry the item.'
            : err instanceof RecountingError
              ? err.message
              : 'The customer was changed concurrently; retry the item.';
        for (const v of plan.items) {
          results.failed(v.index, err instanceof ThrottledError ? 'throttled' : 'conflict', message, v.identifier);
        }
      },
    },
    {
      merchantId,
      finish: activity(results.result, (pending) => {
        const last = plans.slice(plans.length - pending);
        const created = last.filter((plan) => plan.kind === 'create').length;
        return { created, updated: last.reduce((n, plan) => n + plan.items.length, 0) - created };
      }),
    },
  );
  return results.result();
};

/**
 * One plan on its own from fresh reads (the fallback when its transaction lost a race): the email
 * is looked up again and the folded input created, skipped or applied, as separate requests would.
 */
const importAlone = async (
  merchantId: string,
  plan: Plan,
  onConflict: OnConflict,
  sink: {
    outcomes: (plan: Plan, id: number) => void;
    skipped: (index: number, identifier: string) => void;
    failed: (index: number, message: string, identifier: string) => void;
  },
) => {
  const email = plan.items[0].input.email;
  const ownerId = (await customerIdsByEmail(merchantId, [email])).get(email);
  const current = ownerId === undefined ? null : await getCustomerById(merchantId, ownerId);
  if (current && onConflict === 'skip') {
    for (const v of plan.items) sink.skipped(v.index, v.identifier);
    return;
  }
  const ws = new WriteSet();
  const at = formatTimestamp(now());
  let id: number;
  if (current) {
    id = current.id;
    const input = plan.kind === 'create' ? plan.input : plan.input;
    const changes = profileChanges(current, input);
    if (Object.keys(changes).length) addCustomerUpdate(ws, merchantId, current, changes, at);
  } else {
    // An id allocated for a transaction that failed was never written, so it is kept.
    id = plan.kind === 'create' ? plan.id : (await allocateIds(merchantId, { customer: 1 })).customer!;
    const input = plan.kind === 'create' ? plan.input : { ...plan.current, ...plan.input, email };
    addCustomerCreate(ws, merchantId, id, input as CustomerCreate, at, plan.kind === 'create' ? (plan.input.created_at ?? at) : at);
  }
  try {
    await commitUnit(ws, merchantId);
  } catch (err) {
    // The external_id was taken meanwhile: final. Anything else (email taken, customer changed): read again.
    const taken = takenError(err);
    if (taken && !taken.fields.email && taken.fields.external_id) {
      for (const v of plan.items) sink.failed(v.index, EXTERNAL_ID_TAKEN, v.identifier);
      return;
    }
    throw err;
  }
  sink.outcomes(current ? ({ ...plan, kind: 'update', current } as Plan) : plan, id);
};
