/**
 * The hot-merchant load (test/correctness/hot-merchant.slow.test.ts and `npm run bench`): `clients`
 * concurrent clients each create `perClient` paid orders of 1.00, client c's orders going to its
 * own `customersPerClient` customers; client c uses `tokens[c % tokens.length]` (one token: one hot
 * merchant; as many tokens as clients: the load spread out). Returns the answers other than 201,
 * and how many were answered 409 (contention) first and sent again.
 */
export type PostOrder = (token: string, body: Record<string, unknown>) => Promise<{ status: number }>;

export const hotLoad = async (
  post: PostOrder,
  tokens: string[],
  opts: { clients: number; perClient: number; customersPerClient: number; prefix?: string },
) => {
  let non201 = 0;
  let contended = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: opts.clients }, async (_, c) => {
      const token = tokens[c % tokens.length];
      for (let i = 0; i < opts.perClient; i++) {
        const n = c * opts.perClient + i;
        const body = {
          order_no: `${opts.prefix ?? 'HOT'}-${n}`,
          amount: '1.00',
          status: 'paid',
          customer_email: `c${c}-${i % opts.customersPerClient}@example.com`,
        };
        let r = await post(token, body);
        // A 409 (contention: nothing was stored) is sent again once, as its message asks a client to.
        if (r.status === 409) {
          contended++;
          r = await post(token, body);
        }
        if (r.status !== 201) non201++;
      }
    }),
  );
  return { non201, contended, ms: Date.now() - started };
};
