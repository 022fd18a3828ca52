import fc from 'fast-check';

/**
 * A random order as the sales figures read it (no order_no yet): its bookings' times drawn from
 * `time` and put in a possible order (paid not before created, refunded not before paid).
 */
export const saleOrder = (
  time: fc.Arbitrary<string>,
  { customers, currencies, methods }: { customers: number; currencies: string[]; methods: (string | null)[] },
) =>
  fc
    .record({
      customer_id: fc.integer({ min: 1, max: customers }),
      amount: fc.integer({ min: 1, max: 500_000 }).map((c) => (c / 100).toFixed(2)),
      currency: fc.constantFrom(...currencies),
      status: fc.constantFrom('pending', 'paid', 'paid', 'failed', 'refunded', 'cancelled'),
      payment_method: fc.constantFrom(...methods),
      source: fc.constantFrom('api', 'import'),
      billing_cycle: fc.constantFrom('one-time', 'monthly'),
      created: time,
      paid: time,
      later: time,
    })
    .map((o) => {
      const paid = o.status === 'paid' || o.status === 'refunded' ? (o.paid < o.created ? o.created : o.paid) : null;
      return {
        customer_id: o.customer_id,
        amount: o.amount,
        currency: o.currency,
        status: o.status,
        payment_method: o.payment_method,
        source: o.source,
        billing_cycle: o.billing_cycle,
        created_at: o.created,
        // Ties of paid_at between a customer's orders happen: the order_no decides.
        paid_at: paid,
        refunded_at: o.status === 'refunded' ? (o.later < paid! ? paid : o.later) : null,
        failed_at: o.status === 'failed' ? o.later : null,
      };
    });
