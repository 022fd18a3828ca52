import * as z from 'zod';

/**
 * A customer's MRR movement as the API shows it: `GET /customers/{idOrExternalId}/activities` lists
 * them, `GET /metrics/movements` adds whose they are. Here, below both, because metrics sits under
 * customers and may not import it.
 */
export const customerActivitySchema = z
  .object({
    date: z.string().meta({ format: 'date-time', description: 'When the MRR moved (UTC)' }),
    type: z.enum(['new', 'expansion', 'contraction', 'churn', 'reactivation']).meta({
      description: 'The movement, classified as the MRR metrics count it (docs/metrics.md)',
    }),
    amount: z.string().meta({ example: '50.00', description: 'mrr_after − mrr_before: negative for contraction and churn' }),
    mrr_before: z.string().meta({ example: '100.00' }),
    mrr_after: z.string().meta({ example: '150.00' }),
    subscription_id: z.int().nullable().meta({ description: 'The subscription behind the movement, when one is' }),
    order_no: z.string().nullable().meta({ description: 'The recurring order behind the movement, when one is' }),
  })
  .meta({ id: 'CustomerActivity' });
