/**
 * Where a host name in a job spec (a `files[].url`, a container image's registry) really points, decided without DNS:
 * the one address classifier of the doors. Nodes download those URLs and pull those images from inside the
 * deployment's network, so a spec must not make them (or the control plane) reach what only the deployment can reach:
 * the instance metadata service and Azure's wire server, private and loopback ranges, link-local addresses, and the
 * deployment's own storage accounts under any of their endpoint names.
 *
 * IPv4 literals are read the way URL parsers and inet_aton(3) read them (decimal `2852039166`, octal `0251.0376.…`,
 * hex `0x7f000001`, short forms `127.1`): the WHATWG URL parser already normalizes them, so this module lets it and
 * classifies the result. IPv6 literals are expanded, and IPv4-mapped, -compatible and NAT64 forms are classified by
 * the IPv4 address they carry. A name the URL parser refuses is refused too: what it cannot read, a downloader may
 * read differently.
 */

export type HostVerdict =
  | { internal: false; host: string }
  /** `host`: the normalized host; `why`: a sentence for the error message. */
  | { internal: true; host: string; why: string };

interface Ipv4Range {
  base: number;
  bits: number;
  why: string;
}

const v4 = (text: string): number => text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const range = (cidr: string, why: string): Ipv4Range => {
  const [base, bits] = cidr.split('/');
  return { base: v4(base), bits: Number(bits), why };
};

/** The IPv4 ranges no job may name, most specific first (the first match gives the message). */
const IPV4_INTERNAL: readonly Ipv4Range[] = [
  range('169.254.169.254/32', "the instance metadata service (IMDS): it hands out the node's managed identity tokens"),
  range('168.63.129.16/32', "Azure's wire server (platform DNS, health probes, VM agent): reachable only from inside Azure"),
  range('0.0.0.0/8', '"this network" (0.0.0.0/8): it reaches the local host'),
  range('10.0.0.0/8', "a private address (10.0.0.0/8): the deployment's own network"),
  range('100.64.0.0/10', 'a shared address (100.64.0.0/10, carrier-grade NAT): not a public host'),
  range('127.0.0.0/8', 'a loopback address (127.0.0.0/8): the node or the control plane itself'),
  range('169.254.0.0/16', 'a link-local address (169.254.0.0/16): platform services of the host'),
  range('172.16.0.0/12', "a private address (172.16.0.0/12): the deployment's own network"),
  range('192.0.0.0/24', 'an IETF protocol address (192.0.0.0/24): not a public host'),
  range('192.168.0.0/16', "a private address (192.168.0.0/16): the deployment's own network"),
  range('198.18.0.0/15', 'a benchmarking address (198.18.0.0/15): not a public host'),
  range('224.0.0.0/4', 'a multicast address (224.0.0.0/4): not a host'),
  range('240.0.0.0/4', 'a reserved address (240.0.0.0/4, broadcast included): not a public host'),
];

/** Names that resolve to the local host or to internal services by convention (RFC 6761, cloud-internal zones). */
const INTERNAL_NAME_RULES: readonly { test: (h: string) => boolean; why: string }[] = [
  {
    test: (h) => h === 'localhost' || h.endsWith('.localhost') || h === 'localhost.localdomain',
    why: 'a loopback name (localhost): the node or the control plane itself',
  },
  {
    test: (h) => h.endsWith('.internal') || h.endsWith('.internal.cloudapp.net'),
    why: "a cloud-internal name (*.internal, Azure's *.internal.cloudapp.net): the deployment's own network",
  },
  {
    test: (h) => h.endsWith('.local') || h.endsWith('.home.arpa') || h.endsWith('.in-addr.arpa') || h.endsWith('.ip6.arpa'),
    why: 'a local-network name (.local, .home.arpa, reverse-DNS zones): not a public host',
  },
  { test: (h) => !h.includes('.'), why: "a single-label name: the node's DNS search domains would resolve it inside the deployment's network" },
];

/** The Azure Storage endpoint suffixes of every cloud (public, China, US Government, Germany). */
const STORAGE_SUFFIXES = ['core.windows.net', 'storage.azure.net', 'core.chinacloudapi.cn', 'core.usgovcloudapi.net', 'core.cloudapi.de'];

/**
 * The storage account a host name is an endpoint of, or undefined: `<account>[-secondary].<service>.<suffix>` with
 * any labels between (`privatelink.`, the DNS-zone `zNN.` of newer accounts, static websites' `zNN.web.`), for every
 * service (blob, file, dfs, queue, table, web).
 */
export function storageAccountOfHost(host: string): string | undefined {
  const h = normalizeName(host);
  const suffix = STORAGE_SUFFIXES.find((s) => h.endsWith(`.${s}`));
  if (!suffix) return undefined;
  const labels = h.slice(0, -(suffix.length + 1)).split('.');
  if (labels.length < 2) return undefined;
  const account = /^([a-z0-9]{3,24})(?:-secondary)?$/.exec(labels[0])?.[1];
  if (!account) return undefined;
  const services = new Set(['blob', 'file', 'dfs', 'queue', 'table', 'web']);
  return labels.slice(1).some((l) => services.has(l)) ? account : undefined;
}

/** Lowercase, without the trailing dot(s) of a fully qualified name and without IPv6 brackets. */
function normalizeName(host: string): string {
  return host
    .toLowerCase()
    .replace(/\.+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

/** The host as a URL parser reads it (IPv4 forms normalized, IPv6 compressed), or undefined when it cannot. */
function urlHost(host: string): string | undefined {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  try {
    return new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return undefined;
  }
}

function classifyIpv4(address: string): string | undefined {
  const n = v4(address);
  for (const r of IPV4_INTERNAL) {
    const size = 2 ** (32 - r.bits);
    if (Math.floor(n / size) === Math.floor(r.base / size)) return r.why;
  }
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (the URL parser's compressed form), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  const [head, tail, extra] = address.split('::');
  if (extra !== undefined) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  const groups = tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function classifyIpv6(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g) return 'an IPv6 address that cannot be read';
  const embedded = () => `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return 'the unspecified IPv6 address (::): it reaches the local host';
  if (zeros(0, 7) && g[7] === 1) return 'the IPv6 loopback address (::1): the node or the control plane itself';
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry an IPv4 address.
  if ((zeros(0, 5) && g[5] === 0xffff) || zeros(0, 6) || (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6))) {
    const inner = classifyIpv4(embedded());
    return inner ? `an IPv6 form of ${embedded()}, ${inner}` : undefined;
  }
  if ((g[0] & 0xffc0) === 0xfe80) return 'a link-local IPv6 address (fe80::/10): platform services of the host';
  if ((g[0] & 0xfe00) === 0xfc00) return "a unique-local IPv6 address (fc00::/7): the deployment's own network";
  if ((g[0] & 0xffc0) === 0xfec0) return "a site-local IPv6 address (fec0::/10): the deployment's own network";
  if ((g[0] & 0xff00) === 0xff00) return 'a multicast IPv6 address (ff00::/8): not a host';
  return undefined;
}

/**
 * Whether `host` (a URL's host or a registry's host, without port) is internal. `ownAccounts`: the deployment's own
 * storage accounts (host and staging storage), never reachable through a job under any of their endpoint names.
 */
export function classifyHost(host: string, ownAccounts: readonly string[] = []): HostVerdict {
  const parsed = urlHost(normalizeName(host));
  if (parsed === undefined || parsed === '')
    return { internal: true, host, why: 'a host name a URL parser cannot read (a downloader might read it as something else)' };
  const h = normalizeName(parsed);
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) {
    const why = classifyIpv4(h);
    return why ? { internal: true, host: h, why } : { internal: false, host: h };
  }
  if (h.includes(':')) {
    const why = classifyIpv6(h);
    return why ? { internal: true, host: h, why } : { internal: false, host: h };
  }
  const rule = INTERNAL_NAME_RULES.find((r) => r.test(h));
  if (rule) return { internal: true, host: h, why: rule.why };
  const account = storageAccountOfHost(h);
  if (account && ownAccounts.includes(account)) {
    return { internal: true, host: h, why: `an endpoint of storage account "${account}", the app's own storage: jobs can never reach it` };
  }
  return { internal: false, host: h };
}

/**
 * Whether a deployment allows this internal host anyway (ALLOWED_INTERNAL_HOSTS: the local stack's registry, a private
 * registry or file server in the VNet). Entries are `host` (any port) or `host:port`, compared after normalizing the
 * host the same way; the deployment's own storage is never allowed.
 */
export function internalHostAllowed(allowed: readonly string[], host: string, port: string | undefined): boolean {
  const h = urlHost(normalizeName(host));
  if (h === undefined) return false;
  return allowed.some((entry) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(entry.trim().toLowerCase());
    if (!m) return false;
    const eh = urlHost(normalizeName(m[1]));
    return eh !== undefined && eh === h && (m[2] === undefined || m[2] === (port ?? ''));
  });
}
