import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Webhook URL safety (docs/webhook-endpoints.md): no server-side request forgery into the platform's network.
 * A URL must be https on port 443 (http, and any port, only to localhost in the local stack), carry
 * no user info, and its host must resolve only to public addresses: checked at registration and again at
 * delivery time, since DNS can change (`guardedLookup` re-checks at connection time).
 *
 * Addresses are judged with node:net BlockList. IPv4: the special-purpose ranges below are
 * refused. IPv6: only global unicast (2000::/3) minus its special blocks is accepted, plus the
 * IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) forms of public IPv4 addresses — so any
 * block IANA has not assigned for global use (fc00::/7, fe80::/10, ff00::/8, ::1, ::, …) is out.
 */

export type AddressClass =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared (CGNAT)'
  | 'link-local'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'protocol assignment'
  | 'transition (6to4, Teredo)'
  | 'not global unicast'
  | 'not an IP address';

/** Refused IPv4 ranges, most specific first (the first match names the class). */
const IPV4_REFUSED: [string, number, AddressClass][] = [
  ['255.255.255.255', 32, 'broadcast'],
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'protocol assignment'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'transition (6to4, Teredo)'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

/** Refused IPv6 ranges. Everything outside GLOBAL_IPV6 is refused too; these name the common classes. */
const IPV6_REFUSED: [string, number, AddressClass][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'private'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'link-local'], // site-local, deprecated
  ['ff00::', 8, 'multicast'],
  ['64:ff9b:1::', 48, 'private'], // local-use NAT64
  ['100::', 64, 'reserved'], // discard-only
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['2001::', 32, 'transition (6to4, Teredo)'], // Teredo embeds an (obfuscated) IPv4 address
  ['2002::', 16, 'transition (6to4, Teredo)'], // 6to4 embeds an IPv4 address
  ['2001::', 23, 'protocol assignment'],
  ['5f00::', 16, 'reserved'], // SRv6 SIDs
];

/** IPv6 space that may hold public addresses: global unicast and the two IPv4 embeddings. */
const GLOBAL_IPV6: [string, number][] = [
  ['2000::', 3],
  ['::ffff:0.0.0.0', 96],
  ['64:ff9b::', 96],
];

const single = (address: string, prefix: number, family: 'ipv4' | 'ipv6') => {
  const list = new BlockList();
  list.addSubnet(address, prefix, family);
  return list;
};

type Rule = { list: BlockList; family: 'ipv4' | 'ipv6'; cls: AddressClass };
const RULES: Rule[] = [
  ...IPV4_REFUSED.map(([a, p, cls]) => ({ list: single(a, p, 'ipv4'), family: 'ipv4' as const, cls })),
  // The IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms of each refused IPv4 range.
  ...IPV4_REFUSED.flatMap(([a, p, cls]) => [
    { list: single(`::ffff:${a}`, 96 + p, 'ipv6'), family: 'ipv6' as const, cls },
    { list: single(`64:ff9b::${a}`, 96 + p, 'ipv6'), family: 'ipv6' as const, cls },
  ]),
  ...IPV6_REFUSED.map(([a, p, cls]) => ({ list: single(a, p, 'ipv6'), family: 'ipv6' as const, cls })),
];
const globalIpv6 = new BlockList();
for (const [a, p] of GLOBAL_IPV6) globalIpv6.addSubnet(a, p, 'ipv6');

/** `[::1]` → `::1`; a zone id (`fe80::1%eth0`) is dropped: the address alone decides. */
const bare = (address: string): string => address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');

/**
 * Why an address may not receive webhooks, or null when it is a public address. Anything that is
 * not an IP address is refused. Exported for the delivery, which checks every address it connects to.
 */
export const refusedAddressClass = (address: string): AddressClass | null => {
  const ip = bare(address);
  const version = isIP(ip);
  if (version === 0) return 'not an IP address';
  const family = version === 4 ? 'ipv4' : 'ipv6';
  for (const rule of RULES) if (rule.family === family && rule.list.check(ip, family)) return rule.cls;
  if (family === 'ipv6' && !globalIpv6.check(ip, 'ipv6')) return 'not global unicast';
  return null;
};

export const isPublicAddress = (address: string): boolean => refusedAddressClass(address) === null;

/** Host names the local stack may call over http or https without any address check. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const URL_MESSAGES = {
  invalid: 'The url field must be a valid URL.',
  https: 'The url field must be an https URL.',
  httpsLocal: 'The url field must be an https URL (http is allowed only to localhost, 127.0.0.1 or [::1] in the local stack).',
  userinfo: 'The url field must not contain a user name or password.',
  port: 'The url field must use the https port, 443 (no other port).',
  unresolvable: 'The url field host could not be resolved.',
  refused: 'The url field must not point to a loopback, private, link-local, multicast or otherwise non-public address.',
} as const;

export type UrlCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; message: string; refused?: AddressClass };

/**
 * The synchronous part: the URL parses (WHATWG), is https on port 443 (or http(s) to a loopback
 * host on any port, locally) and has no user info. Returns the parsed URL or the 422 message.
 */
export const checkUrlShape = (
  raw: string,
  { allowLocal }: { allowLocal: boolean },
): { ok: true; url: URL; localLoopback: boolean } | { ok: false; message: string } => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: URL_MESSAGES.invalid };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: URL_MESSAGES.invalid };
  if (!url.hostname) return { ok: false, message: URL_MESSAGES.invalid };
  const localLoopback = allowLocal && LOCAL_HOSTS.has(url.hostname);
  if (url.protocol === 'http:' && !localLoopback) return { ok: false, message: allowLocal ? URL_MESSAGES.httpsLocal : URL_MESSAGES.https };
  if (url.username || url.password) return { ok: false, message: URL_MESSAGES.userinfo };
  // 443 only (the parser drops an explicit :443): the API must not probe other ports of public hosts.
  if (!localLoopback && url.port !== '') return { ok: false, message: URL_MESSAGES.port };
  return { ok: true, url, localLoopback };
};

/** Resolves a host name to every address it has (A and AAAA). */
export type Resolver = (hostname: string) => Promise<string[]>;

const RESOLVE_TIMEOUT_MS = 3000;

export const systemResolver: Resolver = async (hostname) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    const found = await Promise.race([
      dnsLookup(hostname, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`DNS lookup of ${hostname} timed out`)), RESOLVE_TIMEOUT_MS);
      }),
    ]);
    return found.map((a) => a.address);
  } finally {
    clearTimeout(timer);
  }
};

let resolver: Resolver = systemResolver;
/** Test hook: the resolver the API uses (DNS by default). */
export const setResolver = (r: Resolver): void => {
  resolver = r;
};
export const resetResolver = (): void => {
  resolver = systemResolver;
};
export const currentResolver = (): Resolver => resolver;

/**
 * The whole check: shape, then every address the host resolves to (or the literal IP) must be
 * public; a name that does not resolve is refused too. Locally, exactly localhost, 127.0.0.1 and
 * [::1] are allowed (over http or https) without resolving. `addresses` are the checked addresses:
 * a caller that connects should connect to one of them (see `guardedLookup`).
 */
export const checkWebhookUrl = async (raw: string, opts: { resolver?: Resolver; allowLocal: boolean }): Promise<UrlCheck> => {
  const shape = checkUrlShape(raw, opts);
  if (!shape.ok) return shape;
  const { url } = shape;
  const host = bare(url.hostname);
  if (shape.localLoopback) return { ok: true, url, addresses: [host === 'localhost' ? '127.0.0.1' : host] };
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await (opts.resolver ?? resolver)(host);
    } catch {
      return { ok: false, message: URL_MESSAGES.unresolvable };
    }
    if (!addresses.length) return { ok: false, message: URL_MESSAGES.unresolvable };
  }
  for (const address of addresses) {
    const refused = refusedAddressClass(address);
    if (refused) return { ok: false, message: URL_MESSAGES.refused, refused };
  }
  return { ok: true, url, addresses };
};

/**
 * A `lookup` for node:http(s) requests (the delivery): resolves like the registration check and
 * fails the connection when any address is refused, so the address connected to is the one
 * checked (no window for DNS rebinding between check and connect). Redirects must not be followed.
 */
export const guardedLookup =
  (opts: { resolver?: Resolver; allowLocal: boolean }) =>
  (
    hostname: string,
    options: { all?: boolean } | number | undefined,
    callback: (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void,
  ) => {
    const scheme = opts.allowLocal && LOCAL_HOSTS.has(hostname) ? 'http' : 'https';
    checkWebhookUrl(`${scheme}://${isIP(hostname) === 6 ? `[${hostname}]` : hostname}/`, opts).then(
      (r) => {
        if (!r.ok) {
          const err = Object.assign(new Error(`${hostname}: ${r.refused ? `refused ${r.refused} address` : r.message}`), {
            code: 'EWEBHOOKADDR',
          });
          return callback(err, []);
        }
        const all = r.addresses.map((address) => ({ address, family: isIP(address) }));
        if (typeof options === 'object' && options?.all) return callback(null, all);
        return callback(null, all[0].address, all[0].family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, []),
    );
  };
