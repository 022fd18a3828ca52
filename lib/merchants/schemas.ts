import * as z from 'zod';
import { ABILITIES } from '#lib/auth/abilities';
import { canonicalZone, TIMEZONE_MESSAGE } from '#lib/shared/zone';

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

/** The merchant's settings: its reporting time zone (changeable) and reporting currency (fixed at creation). */
export const settingsSchema = z
  .object({
    timezone: z.string().meta({
      description: 'The reporting time zone (IANA name): where `GET /orders/stats` starts today and this month. Timestamps stay UTC.',
      example: 'Asia/Taipei',
    }),
    reporting_currency: z.string().meta({ description: 'The currency of the metrics and of the default stats (fixed)', example: 'TWD' }),
    recount: z
      .object({
        status: z.enum(['pending', 'done']).meta({
          description:
            '`pending` while the figures are being recounted in the background for the last change of zone or rates; `done` once they switched (or when there never was one)',
        }),
        requested_at: z
          .string()
          .nullable()
          .meta({ description: 'When the last change was made (UTC); null: never', example: '2026-11-29T08:00:00Z' }),
        switched_at: z
          .string()
          .nullable()
          .meta({ description: 'When the figures switched to it (UTC); null while pending or never', example: '2026-11-29T08:00:09Z' }),
      })
      .meta({ id: 'Recount' }),
  })
  .meta({ id: 'Settings' });

/** PUT /settings: the time zone, an IANA name (any case; stored in its canonical spelling). */
export const settingsPutBody = z.object({
  timezone: z
    .string({ error: 'The :field field must be a string.' })
    .transform((v, ctx) => {
      const zone = canonicalZone(v);
      if (zone === null) {
        ctx.addIssue({ code: 'custom', message: TIMEZONE_MESSAGE });
        return z.NEVER;
      }
      return zone;
    })
    .meta({
      type: 'string',
      description: 'An IANA time zone name, such as `UTC`, `Asia/Taipei` or `America/New_York`',
      example: 'Asia/Taipei',
    }),
});
export type SettingsPut = z.output<typeof settingsPutBody>;
