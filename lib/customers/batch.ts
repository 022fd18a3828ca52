import { randomUUID } from 'node:crypto';
import { now } from '#lib/clock';
import { keys, type Key } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { WriteConflict, WriteSet } from '#lib/db/writes';
import { HttpError } from '#lib/http/errors';
import { issueMessage } from '#lib/http/validation';
import { batchCollector, identifierOf, type BatchResult } from '#lib/shared/schemas';
import { formatTimestamp } from '#lib/shared/time';
import { customerCreateBody, type CustomerCreate, type CustomerUpdate } from '#lib/customers/schemas';
import type { CustomerItem } from '#lib/customers/model';
import {
  addCustomerCreate,
  addCustomerUpdate,
  batchGet,
  customerCreateActions,
  customersByIds,
  customerUpdateActions,
  getCustomerById,
  customerIdsByEmail,
  profileChanges,
} from '#lib/customers/store';
import { EXTERNAL_ID_TAKEN, applyCustomerUpdate, createCustomer, takenFields } from '#lib/customers/service';

export type OnConflict = 'skip' | 'update';

type Item = { index: number; identifier: string; input: CustomerCreate };

/**
 * Everything the batch does to one customer: the items naming one email are folded into one plan
 * (a later item is applied on top of the earlier one, as if the earlier one already existed).
 */
type Plan =
  | { kind: 'create'; items: Item[]; input: CustomerCreate; id: number }
  | { kind: 'update'; items: Item[]; input: CustomerUpdate; current: CustomerItem };

/** Room left in a transaction for the TOTALS update and the activity-log item. */
const ACTIONS_PER_TRANSACTION = 100 - 2;

/** The given (non-undefined) fields of `next` over `base`. */
const overlay = <T extends Record<string, unknown>>(base: T, next: Record<string, unknown>): T => {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(next)) if (v !== undefined) out[k] = v;
  return out as T;
};

const planActions = (plan: Plan): number =>
  plan.kind === 'create' ? customerCreateActions(plan.input) : customerUpdateActions(plan.current, profileChanges(plan.current, plan.input));

/**
 * POST /customers/batch. Items are validated like POST /customers; the existing email and
 * external_id markers are read in one BatchGetItem, new ids come from one allocation, and the
 * writes go out in as few transactions as fit (≤ 100 actions each). A transaction refused by a
 * concurrent writer is redone item by item, so every item is still classified correctly.
 * Nothing is rolled back; the last transaction also records the import in the activity log.
 */
export const importCustomers = async (merchantId: string, rawItems: unknown[], onConflict: OnConflict): Promise<BatchResult> => {
  const results = batchCollector(rawItems.length);
  const tally = { created: 0, updated: 0, skipped: 0, failed: 0 };
  const failed = (index: number, message: string, identifier: string) => {
    results.failed(index, 'validation_error', message, identifier);
    tally.failed++;
  };
  const skipped = (index: number, identifier: string) => {
    results.skipped(index, 'duplicate_email', identifier);
    tally.skipped++;
  };
  const created = (index: number, id: number, identifier: string) => {
    results.created(index, id, identifier);
    tally.created++;
  };
  const updated = (index: number, id: number, identifier: string) => {
    results.updated(index, id, identifier);
    tally.updated++;
  };

  // 1. Validate each item.
  const valid: Item[] = [];
  rawItems.forEach((raw, index) => {
    const identifier = identifierOf(raw, 'email');
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      failed(index, `The customers.${index} field must be an object.`, identifier);
      return;
    }
    const parsed = customerCreateBody.safeParse(raw, { reportInput: true });
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

  // 3. Plan, in array order.
  const plans: Plan[] = [];
  const byEmail = new Map<string, Plan | 'skip'>();
  /** Who holds each external_id: an existing customer's id, or a plan of this batch. */
  const extHolder = new Map<string, number | Plan>();
  for (const v of valid) {
    const { email } = v.input;
    let plan = byEmail.get(email);
    if (plan === 'skip' || (plan && onConflict === 'skip')) {
      skipped(v.index, v.identifier);
      continue;
    }
    if (!plan) {
      const ownerId = markerOwner(emailKey(email));
      if (ownerId !== undefined && onConflict === 'skip') {
        byEmail.set(email, 'skip');
        skipped(v.index, v.identifier);
        continue;
      }
      const current = ownerId === undefined ? undefined : existing.get(ownerId);
      // A marker whose customer is gone was freed meanwhile: create (the transaction re-checks).
      plan =
        current && !current.deleted_at
          ? { kind: 'update', items: [], input: {}, current }
          : { kind: 'create', items: [], input: v.input, id: 0 };
    }
    const ext = v.input.external_id;
    if (ext) {
      const holder = extHolder.get(ext) ?? markerOwner(extKey(ext));
      const self = plan.kind === 'update' ? plan.current.id : plan;
      if (holder !== undefined && holder !== self) {
        failed(v.index, EXTERNAL_ID_TAKEN, v.identifier);
        continue;
      }
      extHolder.set(ext, self);
    }
    if (!plan.items.length) {
      plans.push(plan);
      byEmail.set(email, plan);
    }
    plan.items.push(v);
    plan.input = overlay(plan.input, v.input);
  }

  // 4. New ids in one allocation, in array order.
  const creates = plans.filter((p): p is Extract<Plan, { kind: 'create' }> => p.kind === 'create');
  if (creates.length) {
    const first = (await allocateIds(merchantId, { customer: creates.length })).customer!;
    creates.forEach((p, i) => (p.id = first + i));
  }

  // 5. Pack the plans into transactions.
  const chunks: Plan[][] = [];
  let room = 0;
  for (const plan of plans) {
    const n = planActions(plan);
    if (!chunks.length || n > room) {
      chunks.push([]);
      room = ACTIONS_PER_TRANSACTION;
    }
    chunks[chunks.length - 1].push(plan);
    room -= n;
  }

  const outcomes = (plan: Plan) => {
    if (plan.kind === 'create') {
      const [first, ...rest] = plan.items;
      created(first.index, plan.id, first.identifier);
      for (const v of rest) updated(v.index, plan.id, v.identifier);
    } else {
      for (const v of plan.items) updated(v.index, plan.current.id, v.identifier);
    }
  };
  const counts = (chunk: Plan[]) => {
    const c = { ...tally };
    for (const plan of chunk) {
      if (plan.kind === 'create') c.created++;
      c.updated += plan.items.length - (plan.kind === 'create' ? 1 : 0);
    }
    return c;
  };
  const activity = (c: typeof tally, at: string) => ({
    ...keys.activity(merchantId, at, randomUUID()),
    type: 'customers.import',
    total: rawItems.length,
    ...c,
    created_at: at,
  });

  let logged = false;
  for (const [i, chunk] of chunks.entries()) {
    const at = formatTimestamp(now());
    const last = i === chunks.length - 1;
    const ws = new WriteSet();
    for (const plan of chunk) {
      if (plan.kind === 'create') {
        addCustomerCreate(ws, merchantId, plan.id, plan.input, at);
      } else {
        const changes = profileChanges(plan.current, plan.input);
        if (Object.keys(changes).length) addCustomerUpdate(ws, merchantId, plan.current, changes, at);
      }
    }
    if (last) ws.put('activity', activity(counts(chunk), at));
    try {
      await ws.commit();
      chunk.forEach(outcomes);
      logged ||= last;
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      const items = chunk.flatMap((plan) => plan.items.map((v) => ({ v, id: plan.kind === 'create' && v === plan.items[0] ? plan.id : undefined })));
      items.sort((a, b) => a.v.index - b.v.index);
      for (const { v, id } of items) await importOne(merchantId, v, onConflict, id, { created, updated, skipped, failed });
    }
  }
  if (!logged) {
    const at = formatTimestamp(now());
    await new WriteSet().put('activity', activity({ ...tally }, at)).commit();
  }
  return results.result();
};

type Sink = {
  created: (index: number, id: number, identifier: string) => void;
  updated: (index: number, id: number, identifier: string) => void;
  skipped: (index: number, identifier: string) => void;
  failed: (index: number, message: string, identifier: string) => void;
};

/**
 * One item on its own, as POST /customers (or PUT, for an existing email with on_conflict
 * update) would do it: the fallback when a chunk's transaction lost to a concurrent writer.
 */
const importOne = async (merchantId: string, v: Item, onConflict: OnConflict, preallocatedId: number | undefined, sink: Sink) => {
  const { email } = v.input;
  const id = preallocatedId;
  for (let attempt = 1; ; attempt++) {
    const ownerId = (await customerIdsByEmail(merchantId, [email])).get(email);
    try {
      if (ownerId === undefined) {
        const item = await createCustomer(merchantId, v.input, id);
        sink.created(v.index, item.id, v.identifier);
        return;
      }
      if (onConflict === 'skip') {
        sink.skipped(v.index, v.identifier);
        return;
      }
      const current = await getCustomerById(merchantId, ownerId);
      if (current) {
        const item = await applyCustomerUpdate(merchantId, current, v.input);
        sink.updated(v.index, item.id, v.identifier);
        return;
      }
    } catch (err) {
      const fields = takenFields(err);
      // The email was taken (or its customer deleted) meanwhile: classify again. An id whose
      // transaction failed was never written, so it is kept.
      if (!fields?.email && fields?.external_id) {
        sink.failed(v.index, EXTERNAL_ID_TAKEN, v.identifier);
        return;
      }
      if (!fields?.email && !(err instanceof HttpError && err.status === 404)) throw err;
    }
    if (attempt >= 4) throw new Error(`customer import of item ${v.index} kept conflicting`);
  }
};
