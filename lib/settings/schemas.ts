import * as z from 'zod';
import { canonicalZone, TIMEZONE_MESSAGE } from '#lib/shared/zone';

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
