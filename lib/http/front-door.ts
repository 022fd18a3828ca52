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
 * CloudFront's `ip:port` of the viewer. Behind CloudFront, API Gateway's `sourceIp` is the edge
 * server's address, so the per-IP window reads the viewer's from here, and only from a request that
 * carried the secret (CloudFront sets this header itself; a caller cannot reach the API with its own).
 */
export const VIEWER_ADDRESS_HEADER = 'cloudfront-viewer-address';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Whether `presented` is the secret, compared in constant time (over digests, so lengths leak nothing either). */
export const isFrontDoorSecret = (presented: string | undefined, secret: string): boolean =>
  presented !== undefined && timingSafeEqual(digest(presented), digest(secret));

/** The IP of CloudFront's `ip:port` (IPv4 `198.51.100.10:46532`, IPv6 `2001:db8::1:46532`); undefined if it is not that shape. */
export const viewerIpOf = (address: string | undefined): string | undefined => {
  const match = /^(.+):(\d{1,5})$/.exec(address?.trim() ?? '');
  if (!match) return undefined;
  const ip = match[1].replace(/^\[(.*)\]$/, '$1');
  return /^[0-9a-fA-F:.]+$/.test(ip) && (ip.includes('.') || ip.includes(':')) ? ip : undefined;
};
