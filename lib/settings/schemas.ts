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
    delinquency_days: z.int().meta({
      description:
        'Days a subscription may stay past due (a failed renewal not recovered) before it is cancelled on its own, reason `delinquent`; also the grace a late renewal of a recurring order has. 1–90, default 30',
      example: 30,
    }),
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

/** The days a renewal may stay past due: a whole number from 1 to 90. */
export const DELINQUENCY_DAYS = { min: 1, max: 90 } as const;

/** PUT /settings: the time zone, an IANA name (any case; stored in its canonical spelling), and the delinquency days; either or both. */
export const settingsPutBody = z
  .object({
    // Any other value, of any type, gets the one message that names the allowed values.
    delinquency_days: z
      .unknown()
      .refine(
        (n) => n === undefined || (Number.isInteger(n) && (n as number) >= DELINQUENCY_DAYS.min && (n as number) <= DELINQUENCY_DAYS.max),
        {
          message: 'The delinquency days field must be an integer between 1 and 90.',
        },
      )
      .transform((n) => n as number | undefined)
      .optional()
      .meta({
        type: 'integer',
        minimum: DELINQUENCY_DAYS.min,
        maximum: DELINQUENCY_DAYS.max,
        description: 'Days a subscription may stay past due before it is cancelled as delinquent: 1–90 (default 30)',
      }),
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
      })
      .nullish(),
  })
  .superRefine((s, ctx) => {
    // A null zone is none; the message is the one a body without a zone had when the zone was the only setting.
    if (s.timezone == null && s.delinquency_days === undefined)
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'The timezone field is required.' });
  });
export type SettingsPut = z.output<typeof settingsPutBody>;
