import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The front door (docs/deployment-and-protection.md, *In front of the functions*): when the API is
 * deployed behind CloudFront, CloudFront adds `ORIGIN_VERIFY_HEADER` with the stage's secret to every
 * request it forwards, and the pipeline refuses requests without it — callers that go round
 * CloudFront (and its web ACL) to the execute-api address. Unset (`npm start`, tests, a stack built
 * without the edge), nothing is checked.
 */
export const ORIGIN_VERIFY_HEADER = 'x-origin-verify';
/** The function environment variable holding the secret (set by the stack from Secrets Manager). */
export const ORIGIN_VERIFY_ENV = 'ORIGIN_VERIFY_SECRET';
/**
 * Behind CloudFront, API Gateway's `sourceIp` is the edge server's address, so the per-IP window
 * reads the viewer's from what CloudFront adds, and only on a request that carried the secret:
 * `CloudFront-Viewer-Address` (`ip:port`) when the origin request policy forwards it, otherwise the
 * entry CloudFront appends to `X-Forwarded-For` (`viewerIpOf`).
 */
export const VIEWER_ADDRESS_HEADER = 'cloudfront-viewer-address';
export const FORWARDED_FOR_HEADER = 'x-forwarded-for';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Whether `presented` is the secret, compared in constant time (over digests, so lengths leak nothing either). */
export const isFrontDoorSecret = (presented: string | undefined, secret: string): boolean =>
  presented !== undefined && timingSafeEqual(digest(presented), digest(secret));

const isIp = (value: string) => /^[0-9a-fA-F:.]+$/.test(value) && (/^\d{1,3}(\.\d{1,3}){3}$/.test(value) || value.includes(':'));

/** The IP of CloudFront's `ip:port` (IPv4 `198.51.100.10:46532`, IPv6 `2001:db8::1:46532`); undefined if it is not that shape. */
export const viewerAddressIp = (address: string | undefined): string | undefined => {
  const match = /^(.+):(\d{1,5})$/.exec(address?.trim() ?? '');
  if (!match) return undefined;
  const ip = match[1].replace(/^\[(.*)\]$/, '$1');
  return isIp(ip) ? ip : undefined;
};

/**
 * The viewer's IP on a request that came through CloudFront: from `CloudFront-Viewer-Address` if
 * present, else the last `X-Forwarded-For` entry that is not the connecting edge server's own
 * (`sourceIp`, which API Gateway may append after CloudFront's). Entries before CloudFront's are the
 * caller's own claims and are never read. Undefined when neither gives an IP.
 */
export const viewerIpOf = (headers: Record<string, string | undefined>, sourceIp: string | undefined): string | undefined => {
  const address = viewerAddressIp(headers[VIEWER_ADDRESS_HEADER]);
  if (address) return address;
  const forwarded = (headers[FORWARDED_FOR_HEADER] ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (forwarded.length > 1 && forwarded.at(-1) === sourceIp) forwarded.pop();
  const last = forwarded.at(-1);
  return last !== undefined && isIp(last) ? last : undefined;
};
