import { db } from '#lib/db/client';

/**
 * Records the DynamoDB commands a piece of code sends through the shared client (command name and
 * input as sent, with start and end times), so the bench can replay them bare (item 3) or write the
 * items they touched with raw BatchWriteItem (item 4). Everything sent while `fn` runs is recorded
 * (requests served by the in-process HTTP server included), so use it for one thing at a time.
 */
export type Sent = { command: string; input: Record<string, any>; start: number; end: number };

let recording: Sent[] | undefined;
let installed = false;

const install = () => {
  if (installed) return;
  installed = true;
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const log = recording;
      if (!log) return next(args);
      const sent: Sent = {
        command: String(context.commandName).replace(/Command$/, ''),
        input: args.input as Record<string, any>,
        start: performance.now(),
        end: 0,
      };
      log.push(sent);
      try {
        return await next(args);
      } finally {
        sent.end = performance.now();
      }
    },
    { step: 'initialize', priority: 'high', name: 'benchCapture' },
  );
};

export const capturing = async <T>(fn: () => Promise<T>): Promise<{ result: T; sent: Sent[] }> => {
  install();
  if (recording) throw new Error('capturing: already recording');
  const sent: Sent[] = [];
  recording = sent;
  try {
    return { result: await fn(), sent };
  } finally {
    recording = undefined;
  }
};

/** Keys (pk, sk) of the items the recorded TransactWriteItems and single writes put or updated. */
export const writtenKeys = (sent: Sent[]): { pk: string; sk: string }[] => {
  const out = new Map<string, { pk: string; sk: string }>();
  const add = (k: { pk: string; sk: string }) => out.set(`${k.pk}\u0000${k.sk}`, { pk: k.pk, sk: k.sk });
  for (const s of sent) {
    if (s.command === 'TransactWriteItems') {
      for (const a of s.input.TransactItems ?? []) {
        if (a.Put) add(a.Put.Item);
        if (a.Update) add(a.Update.Key);
      }
    }
    if (s.command === 'PutItem') add(s.input.Item);
    if (s.command === 'UpdateItem') add(s.input.Key);
  }
  return [...out.values()];
};

/**
 * A copy of `value` with every occurrence of `from` in its strings replaced by `to` (merchant ids in
 * keys and index attributes); other objects (NumberValue, Set, bytes) are kept as they are.
 */
export const rebind = <T>(value: T, from: string, to: string): T => {
  if (typeof value === 'string') return value.split(from).join(to) as T;
  if (Array.isArray(value)) return value.map((v) => rebind(v, from, to)) as T;
  if (value && typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [rebind(k, from, to), rebind(v, from, to)])) as T;
  }
  return value;
};
