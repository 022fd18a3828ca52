import type { EventFilter, WebhookStatus } from '#lib/webhooks/schemas';

/**
 * A stored webhook endpoint. The signing secret is kept only encrypted (`lib/webhooks/secrets.ts`);
 * after a rotation the replaced one stays, encrypted, until `previous_secret_expires_at`, so
 * deliveries can carry both signatures for 24 hours (docs/webhook-endpoints.md). `version` guards every change.
 */
export type WebhookEndpointItem = {
  pk: string;
  sk: string;
  id: number;
  /** Normalised (WHATWG `href`) as checked at registration. */
  url: string;
  events: EventFilter;
  status: WebhookStatus;
  description: string | null;
  secret_encrypted: string;
  /** When the current secret was issued (creation or the last rotation). */
  secret_created_at: string;
  previous_secret_encrypted?: string;
  previous_secret_expires_at?: string;
  created_at: string;
  updated_at: string;
  version: number;
};

/** The endpoint as the API returns it: never any secret, encrypted or not. */
export const presentWebhookEndpoint = (e: WebhookEndpointItem) => ({
  id: Number(e.id),
  url: e.url,
  events: [...e.events],
  status: e.status,
  description: e.description ?? null,
  created_at: e.created_at,
  updated_at: e.updated_at,
});
export type WebhookEndpoint = ReturnType<typeof presentWebhookEndpoint>;
