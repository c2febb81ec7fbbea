/**
 * A draft as commented YAML: fields in the order docs/job-spec.md lists them, each with a comment naming the Shipyard
 * setting it came from, and a header listing what was not carried over and what the user must still fill in. Pure.
 */
import YAML from 'yaml';
import type { Obj, SpecDraft } from './context';
import { isObj } from './context';

const ORDER: Record<string, string[]> = {
  '': [
    'id',
    'name',
    'tags',
    'queue',
    'priority',
    'dependsOn',
    'array',
    'pool',
    'container',
    'data',
    'files',
    'mounts',
    'scratch',
    'mpi',
    'outputs',
    'limits',
    'cleanup',
  ],
  pool: ['vmSize', 'nodes', 'image', 'customImageId', 'nodeAgentSku', 'resizeTimeout', 'partialAllocation', 'startTask'],
  container: ['runtime', 'images', 'registry', 'pullConcurrency', 'allowAboveTen', 'runOptions', 'gpus'],
  mpi: ['runtime', 'version', 'processesPerNode', 'fabric', 'env', 'preExecutionCommand', 'coordinationCommand', 'launcher', 'options', 'command'],
};

function ordered(value: unknown, path: string): unknown {
  if (Array.isArray(value)) return value.map((v) => ordered(v, path));
  if (!isObj(value)) return value;
  const order = ORDER[path] ?? [];
  const keys = Object.keys(value).sort((a, b) => rank(order, a) - rank(order, b));
  const out: Obj = {};
  for (const k of keys) out[k] = ordered(value[k], path === '' ? k : `${path}.${k}`);
  return out;
}

const rank = (order: string[], k: string) => (order.includes(k) ? order.indexOf(k) : order.length);

export interface EmitContext {
  /** e.g. "jobs.yaml job_specifications[0]": the header's first line names it. */
  origin: string;
  /** Shown in the header: how to see the whole report again. */
  reportHint: string;
}

export function emitSpecYaml(draft: SpecDraft, ctx: EmitContext): string {
  const doc = new YAML.Document(ordered(draft.spec, ''));
  const header = [
    ` Imported from Batch Shipyard by \`hpcjob import shipyard\`: ${ctx.origin}.`,
    ` Each field's comment names the Shipyard setting it came from. ${ctx.reportHint}`,
    ...draft.header.map((h) => ` ${h}`),
  ];
  doc.commentBefore = header.join('\n');
  for (const [at, lines] of [...draft.comments.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const pair = pairAt(doc, splitPath(at));
    const text = lines.map((l) => ` ${l}`).join('\n');
    if (pair && YAML.isScalar(pair.key)) pair.key.commentBefore = pair.key.commentBefore ? `${pair.key.commentBefore}\n${text}` : text;
    else doc.commentBefore = `${doc.commentBefore}\n ${at}: ${lines.join('; ')}`;
  }
  return doc.toString({ lineWidth: 0, indentSeq: true });
}

/** "mpi.env.EXE" → ['mpi','env','EXE']; "container.images[0]" → ['container','images'] (comments go on the key). */
function splitPath(path: string): string[] {
  return path
    .replace(/\[\d+\]/g, '')
    .split('.')
    .filter(Boolean);
}

function pairAt(doc: YAML.Document, path: string[]): YAML.Pair | undefined {
  if (path.length === 0) return undefined;
  const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
  if (!YAML.isMap(parent)) return undefined;
  return parent.items.find((p) => (YAML.isScalar(p.key) ? p.key.value : p.key) === path[path.length - 1]) as YAML.Pair | undefined;
}
