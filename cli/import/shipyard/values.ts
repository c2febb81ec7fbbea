/**
 * Shipyard values in the job spec's terms: time spans, ids and tag values, shm sizes, VM sizes Azure retired, and the
 * marketplace images with their node agents. Pure.
 */
import { formatIsoDuration } from '../../../shared/core/spec/duration';
import { isGpuSize, parseVmSize, retiredVmSize } from '../../../shared/core/planning/vmSizes';
import { isRdmaCapable } from '../../../shared/core/mpi/rdmaPresets';
import * as P from '../../../shared/core/spec/patterns';

/**
 * Shipyard's time spans: "[days.]HH:MM:SS" (convoy/util.py convert_string_to_timedelta), e.g. "02:00:00",
 * "7.00:00:00". Returns an ISO 8601 duration, or undefined when the text is not one.
 */
export function shipyardTimespanToIso(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(?:(\d{1,6})\.)?(\d{1,6}):(\d{1,6}):(\d{1,6})$/.exec(text.trim());
  if (!m) return undefined;
  const [, days, h, min, s] = m;
  const ms = ((Number(days ?? 0) * 24 + Number(h)) * 3600 + Number(min) * 60 + Number(s)) * 1000;
  return ms > 0 ? formatIsoDuration(ms) : undefined;
}

/** A job id the spec accepts (lowercase letters, digits, hyphens; 1–64), from any Shipyard id. */
export function toJobId(text: string): string {
  const id = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return id || 'shipyard-job';
}

/** A spec name (letters, digits, ".", "_", "-"; 1–128). */
export function toName(text: string): string {
  const n = text
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[^A-Za-z0-9]+|-+$/g, '')
    .slice(0, 128);
  return n || 'shipyard-job';
}

/** A tag value (no spaces or shell characters; up to 256). */
export function toTagValue(text: string): string {
  return text
    .replace(/[^A-Za-z0-9._:/@+=,-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 256);
}

/**
 * Docker's --shm-size as the spec takes it ("512m", "8g"): Docker reads a number with an optional b/k/m/g unit, in
 * either case, bytes when none. Returns undefined when the size cannot be written that way (or is not a size).
 */
export function toShmSize(value: unknown): string | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (text === undefined) return undefined;
  const m = /^(\d+)([bkmg]?)b?$/.exec(text);
  if (!m) return undefined;
  let n = Number(m[1]);
  let unit = m[2] || 'b';
  if (unit === 'b') {
    if (n % 1024 !== 0) return undefined;
    n /= 1024;
    unit = 'k';
  }
  // The spec writes at most six digits: go up a unit while the number divides evenly.
  const units = ['k', 'm', 'g'];
  while (String(n).length > 6 && unit !== 'g' && n % 1024 === 0) {
    n /= 1024;
    unit = units[units.indexOf(unit) + 1];
  }
  const out = `${n}${unit}`;
  return /^[1-9]\d{0,5}[kmg]$/.test(out) ? out : undefined;
}

/**
 * The size that replaces a retired one: same kind of node (InfiniBand stays InfiniBand, GPUs stay GPUs, GPU count kept
 * where a successor has it). The series and its published successors come from shared/core/planning/vmSizes.ts.
 */
export function successorVmSize(vmSize: string): string | undefined {
  const retired = retiredVmSize(vmSize);
  const p = parseVmSize(vmSize);
  if (!retired || !p) return undefined;
  if (isGpuSize(vmSize)) {
    if (p.family === 'nv') return 'Standard_NV36ads_A10_v5';
    // ND and RDMA NC sizes had InfiniBand between GPU nodes: ND A100 v4 keeps it.
    if (p.family === 'nd' || isRdmaCapable(vmSize)) return 'Standard_ND96asr_v4';
    // NC A100 v4 per GPU count: NC6 (1 GPU) → NC24ads, NC12 (2) → NC48ads, NC24 (4) → NC96ads.
    return p.vcpus <= 6 ? 'Standard_NC24ads_A100_v4' : p.vcpus <= 12 ? 'Standard_NC48ads_A100_v4' : 'Standard_NC96ads_A100_v4';
  }
  return 'Standard_HB120rs_v3';
}

/** What the importer knows about a marketplace image Shipyard named. */
export interface ImageVerdict {
  /** Keep it, with this node agent. */
  keep?: { publisher: string; offer: string; sku: string; version: string; nodeAgentSku: string };
  /** Why it is replaced by the spec's default image. */
  replace?: string;
}

/**
 * Marketplace images Batch still supports that an Azure HPC team is likely to name, with their node agents. Anything
 * else is replaced by the spec's default HPC image, saying why (Shipyard's CentOS 7 / Ubuntu 16.04–18.04 images and
 * Batch's "-container" images are past their end of support).
 */
const SUPPORTED_IMAGES: { publisher: RegExp; offer: RegExp; sku: RegExp; agent: (sku: string) => string }[] = [
  { publisher: /^microsoft-dsvm$/i, offer: /^ubuntu-hpc$/i, sku: /^(2004|2204|2404)$/, agent: (s) => `batch.node.ubuntu ${s.slice(0, 2)}.${s.slice(2)}` },
  {
    publisher: /^canonical$/i,
    offer: /^0001-com-ubuntu-server-(focal|jammy)$/i,
    sku: /^(20|22)_04-lts(-gen2)?$/i,
    agent: (s) => `batch.node.ubuntu ${s.slice(0, 2)}.04`,
  },
  { publisher: /^canonical$/i, offer: /^ubuntu-24_04-lts$/i, sku: /^server(-gen1)?$/i, agent: () => 'batch.node.ubuntu 24.04' },
  { publisher: /^almalinux$/i, offer: /^almalinux-hpc$/i, sku: /^8[-_]\d+-hpc(-gen2)?$/i, agent: () => 'batch.node.el 8' },
  {
    publisher: /^microsoft-azure-batch$/i,
    offer: /^ubuntu-server-container$/i,
    sku: /^(20|22)-04-lts$/i,
    agent: (s) => `batch.node.ubuntu ${s.slice(0, 2)}.04`,
  },
];

export function imageVerdict(publisher: string, offer: string, sku: string, version: string): ImageVerdict {
  for (const img of SUPPORTED_IMAGES) {
    if (img.publisher.test(publisher) && img.offer.test(offer) && img.sku.test(sku)) {
      const valid = [publisher, offer, sku, version].every((v) => P.IMAGE_SEGMENT_RE.test(v));
      if (valid) return { keep: { publisher, offer, sku, version, nodeAgentSku: img.agent(sku) } };
    }
  }
  const os = `${publisher}/${offer}/${sku}`;
  if (/centos/i.test(offer)) return { replace: `${os} is CentOS 7, end of life since 2024-06-30; Batch no longer offers its node agent` };
  if (/^ubuntuserver$/i.test(offer) || /^1[468]\.04/.test(sku)) return { replace: `${os} is Ubuntu ${sku.slice(0, 5)}, whose Batch node agent is retired` };
  if (/debian/i.test(offer)) return { replace: `${os}: Debian images are no longer supported by Batch for this use` };
  return { replace: `${os} is not an image this importer knows Batch supports with a known node agent` };
}

/** Node agents Batch has retired (Shipyard-era custom images were built on them). */
export function retiredNodeAgent(agent: string): boolean {
  return /^batch\.node\.(centos 7|ubuntu 1[468]\.04|debian 9|debian 8|opensuse)/i.test(agent);
}
