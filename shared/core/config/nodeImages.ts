/**
 * NODE_IMAGES_CUSTOM: the custom node images of this deployment, described for the node image checks
 * (shared/core/images/imageChecks.ts) the way the image catalog describes the Marketplace ones. A JSON array:
 *   [{ "idPrefix": "/subscriptions/…/galleries/g/images/hpc", "title": "our HPC image",
 *      "modules": ["mpi/hpcx"], "paths": ["/opt/solver"], "runtimes": ["singularity"] }]
 * A pool.customImageId that starts with an idPrefix (case-insensitive) is checked against that entry; an undeclared
 * custom image is not checked (explain says so).
 */
import type { DeclaredCustomImage } from '../images/catalog';

const MODULE_RE = /^[A-Za-z0-9][A-Za-z0-9._+/-]{0,127}$/;
const PATH_RE = /^\/[A-Za-z0-9._/-]{1,511}$/;

export function parseCustomNodeImages(text: string | undefined, problems: string[]): DeclaredCustomImage[] {
  if (!text || !text.trim()) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    problems.push('NODE_IMAGES_CUSTOM: must be a JSON array of { idPrefix, title?, modules?, paths?, runtimes? }');
    return [];
  }
  if (!Array.isArray(value)) {
    problems.push('NODE_IMAGES_CUSTOM: must be a JSON array');
    return [];
  }
  const out: DeclaredCustomImage[] = [];
  value.forEach((raw: unknown, i) => {
    const e = (raw ?? {}) as Record<string, unknown>;
    const at = `NODE_IMAGES_CUSTOM[${i}]`;
    const strings = (k: string, re: RegExp): string[] | undefined => {
      const v = e[k];
      if (v === undefined) return [];
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && re.test(x))) {
        problems.push(`${at}.${k}: must be a list of ${k === 'paths' ? 'absolute paths' : 'module names'}`);
        return undefined;
      }
      return v as string[];
    };
    if (typeof e.idPrefix !== 'string' || !/^\/subscriptions\/[^\s]{1,1000}$/i.test(e.idPrefix)) {
      problems.push(`${at}.idPrefix: must be the ARM id (or its leading part) of a managed or gallery image, "/subscriptions/…"`);
      return;
    }
    const modules = strings('modules', MODULE_RE);
    const paths = strings('paths', PATH_RE);
    const runtimes = e.runtimes === undefined ? [] : e.runtimes;
    if (!Array.isArray(runtimes) || !runtimes.every((r) => r === 'docker' || r === 'singularity')) {
      problems.push(`${at}.runtimes: must be a list of "docker", "singularity"`);
      return;
    }
    if (e.title !== undefined && typeof e.title !== 'string') problems.push(`${at}.title: must be a string`);
    if (!modules || !paths) return;
    out.push({
      idPrefix: e.idPrefix,
      ...(typeof e.title === 'string' ? { title: e.title } : {}),
      modules,
      paths,
      runtimes: runtimes as DeclaredCustomImage['runtimes'],
    });
  });
  return out;
}
