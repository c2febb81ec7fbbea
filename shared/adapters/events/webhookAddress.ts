/**
 * Which addresses a webhook may reach. Pure: the URL check at start-up and the address check at connect time (every
 * address a name resolves to, so a public name pointing at 169.254.169.254 or a private range is refused too).
 *
 * Refused: loopback (unless the deployment allows it for local use), the link-local range with the instance
 * metadata service (169.254.169.254) and Azure's platform address 168.63.129.16, private and shared ranges (RFC 1918,
 * RFC 6598, IPv6 ULA), unspecified, multicast, documentation and reserved ranges, and IPv4 hidden in IPv6 (mapped,
 * NAT64) when the IPv4 is refused.
 */
import { isIP } from 'node:net';

export type AddressClass = 'public' | 'loopback' | 'refused';

type Range4 = [number, number]; // [network as uint32, prefix length]

const V4_REFUSED: Range4[] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
  ['168.63.129.16', 32],
].map(([a, p]) => [v4ToInt(a as string), p as number]);

function v4ToInt(a: string): number {
  return a.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function inRange4(ip: number, [net, prefix]: Range4): boolean {
  if (prefix === 0) return true;
  const shift = 32 - prefix;
  return Math.floor(ip / 2 ** shift) === Math.floor(net / 2 ** shift);
}

function classify4(ip: number): AddressClass {
  if (inRange4(ip, [v4ToInt('127.0.0.0'), 8])) return 'loopback';
  return V4_REFUSED.some((r) => inRange4(ip, r)) ? 'refused' : 'public';
}

/** The 8 groups of an IPv6 address (with an embedded dotted IPv4 tail), or undefined if it is not one. */
export function ipv6Groups(address: string): number[] | undefined {
  let a = address.replace(/^\[|\]$/g, '').toLowerCase();
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  if (isIP(a) !== 6) return undefined;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const n = v4ToInt(dotted[1]);
    a = `${a.slice(0, -dotted[1].length)}${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array(8 - h.length - t.length).fill('0');
  const groups = [...h, ...fill, ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

function classify6(g: number[]): AddressClass {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  if (zeroUpTo(8)) return 'refused';
  // IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d: judge the IPv4 inside.
  const embedded = g[6] * 65536 + g[7];
  if (zeroUpTo(5) && (g[5] === 0xffff || g[5] === 0)) return classify4(embedded);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return classify4(embedded);
  if ((g[0] & 0xfe00) === 0xfc00) return 'refused'; // fc00::/7 unique local (fd00:ec2::254 is a metadata address)
  if ((g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xffc0) === 0xfec0) return 'refused'; // link-local, site-local
  if ((g[0] & 0xff00) === 0xff00) return 'refused'; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'refused'; // documentation
  if (g[0] === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return 'refused'; // discard-only
  if (g[0] === 0x2002) return classify4(g[1] * 65536 + g[2]); // 6to4 carries an IPv4
  return 'public';
}

/** The class of an IP address literal (v4 or v6, brackets allowed); undefined when it is not an IP address. */
export function classifyAddress(address: string): AddressClass | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return classify4(v4ToInt(bare));
  const g = ipv6Groups(bare);
  return g ? classify6(g) : undefined;
}

/** Whether a connection to `address` (an IP literal) may be made. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  const c = classifyAddress(address);
  return c === 'public' || (c === 'loopback' && allowLoopback);
}

const LOOPBACK_NAMES = /^(localhost|localhost\.localdomain|.*\.localhost)\.?$/i;
/** Names that only ever mean something inside a platform (metadata services, cluster-internal DNS). */
const INTERNAL_NAMES = /(^|\.)(internal|local|localdomain|home\.arpa)\.?$|^metadata(\.|$)/i;

/**
 * Why `url` cannot be a webhook, or undefined when it can: https (http only to a loopback host when allowed), no
 * credentials in it, and a host that is neither a refused address nor a platform-internal name. DNS names are checked
 * again, address by address, when the request connects (webhookSender.ts).
 */
export function webhookUrlProblem(url: string, allowLoopback: boolean): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `not a URL: ${JSON.stringify(url)}`;
  }
  if (u.username || u.password) return 'must not carry credentials (user:password@)';
  if (u.hash) return 'must not have a fragment';
  // The URL parser has already turned 2852039166, 0xA9FEA9FE and 0251.0376.0251.0376 into 169.254.169.254.
  const host = u.hostname;
  const literal = classifyAddress(host);
  const loopback = literal === 'loopback' || (literal === undefined && LOOPBACK_NAMES.test(host));
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback && allowLoopback)) {
    return `must be an https URL${allowLoopback ? ' (http only to a loopback host)' : ''}, got ${JSON.stringify(url)}`;
  }
  if (loopback && !allowLoopback) return `${host} is a loopback address; webhooks must be reachable public endpoints`;
  if (literal === 'refused') return `${host} is an internal, private or reserved address`;
  if (literal === undefined && !loopback && INTERNAL_NAMES.test(host)) return `${host} is a platform-internal name`;
  return undefined;
}
