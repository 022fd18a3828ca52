import * as z from 'zod';
import { ABILITIES } from '#lib/auth/abilities';

/** The back office's view of the merchant's API token (docs/authentication-and-limits.md): never the token itself. */
export const apiTokenSchema = z
  .object({
    prefix: z.string().meta({ description: 'The first characters of the token (`ras_` and four more)', example: 'ras_Ab3d' }),
    last_four: z.string().meta({ example: 'x9Qz' }),
    abilities: z.array(z.enum(ABILITIES)),
    created_at: z.string(),
    last_used_at: z
      .string()
      .nullable()
      .meta({ description: 'When the token last authenticated a request, to the minute; null until then' }),
  })
  .meta({ id: 'ApiToken' });

/** A token just created or regenerated: the plain value, shown this once. */
export const apiTokenIssuedSchema = apiTokenSchema
  .extend({ token: z.string().meta({ description: 'The token. It is shown only in this response: store it now.' }) })
  .meta({ id: 'ApiTokenIssued' });

/** The back-office caller as the dashboard shows it: its merchant, and its role (which controls it gets). */
export const backofficeSessionSchema = z
  .object({
    merchant_id: z.string(),
    name: z.string(),
    reporting_currency: z.string().meta({ description: 'The currency of the metrics and of the default stats', example: 'TWD' }),
    timezone: z.string().meta({ description: 'The reporting time zone (IANA name)', example: 'Asia/Taipei' }),
    role: z.enum(['admin', 'user']),
  })
  .meta({ id: 'BackofficeSession' });
