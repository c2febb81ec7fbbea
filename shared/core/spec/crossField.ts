/**
 * Rules that relate two or more fields. They read the raw input defensively (any field may be missing
 * or of the wrong type) so they can run next to the schema and every problem is reported in one answer,
 * not one layer at a time.
 */
import { parseIsoDuration } from './duration';
import { LIMITS } from './schema';
import { containerIssues } from './sections/container';
import { launchIssues } from './sections/launch';
import { has, isObj, obj } from './rawInput';
import { dataSectionIssues } from './sections/dataRules';
import { schedulingIssues } from './sections/scheduling';

import type { SpecIssue } from './issue';
export type { SpecIssue } from './issue';

/** Field names that smell like a stored credential anywhere under container.registry. */
export const PLAIN_SECRET_KEY_RE = /^(password|passwd|pass|secret|token|key|accessKey|apiKey|clientSecret)$/i;
export const PLAIN_PASSWORD_MESSAGE =
  'a plain password is never accepted in a job spec: specs are stored in Table Storage and shown in job views. ' +
  'Use identity: "managed", or identity: { secretRef: <Key Vault secret URI or app-setting name>, username: <name> }';

export function crossFieldIssues(raw: unknown): SpecIssue[] {
  if (!isObj(raw)) return [];
  const issues: SpecIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });

  const pool = obj(raw, 'pool');
  const reuse = typeof pool.poolId === 'string';
  if (reuse) {
    for (const k of ['vmSize', 'image', 'customImageId', 'nodeAgentSku', 'startTask', 'network'] as const) {
      if (has(pool, k)) add(['pool', k], `not allowed together with pool.poolId: a reused pool keeps its own ${k}`);
    }
    const deletePool = obj(raw, 'cleanup').deletePool;
    if (deletePool === 'always' || deletePool === 'onSuccess') {
      add(['cleanup', 'deletePool'], 'must be "never" (or left out) with pool.poolId: the control plane only deletes pools it created');
    }
  } else if (isObj(raw.pool)) {
    if (!has(pool, 'vmSize')) add(['pool', 'vmSize'], 'is required when a new pool is created (no pool.poolId given)');
    if (has(pool, 'image') && has(pool, 'customImageId')) {
      add(['pool', 'customImageId'], 'give either pool.image or pool.customImageId, not both');
    }
    if ((has(pool, 'image') || has(pool, 'customImageId')) && !has(pool, 'nodeAgentSku')) {
      add(['pool', 'nodeAgentSku'], 'is required with pool.image or pool.customImageId (it must match the image, e.g. "batch.node.ubuntu 22.04")');
    }
    if (!has(pool, 'image') && !has(pool, 'customImageId') && has(pool, 'nodeAgentSku')) {
      add(['pool', 'nodeAgentSku'], 'only allowed together with pool.image or pool.customImageId (the default image brings its own)');
    }
  }
  if (typeof pool.lowPriorityNodes === 'number' && pool.lowPriorityNodes > LIMITS.maxLowPriorityNodes) {
    add(['pool', 'lowPriorityNodes'], 'must be 0: ask for Spot/low-priority nodes with pool.spot (it says what happens when Azure takes one back)');
  }
  const spot = obj(pool, 'spot');
  if (reuse && has(pool, 'spot')) add(['pool', 'spot'], 'not allowed together with pool.poolId: a reused pool keeps its own nodes');
  if (typeof spot.nodes === 'number' && typeof pool.nodes === 'number' && spot.nodes > pool.nodes) {
    add(['pool', 'spot', 'nodes'], `must not exceed pool.nodes (${pool.nodes}): pool.spot.nodes of the pool's nodes are Spot nodes`);
  }
  const partial = obj(pool, 'partialAllocation');
  if (typeof partial.minNodes === 'number' && typeof pool.nodes === 'number' && partial.minNodes > pool.nodes) {
    add(['pool', 'partialAllocation', 'minNodes'], `must not exceed pool.nodes (${pool.nodes})`);
  }

  const container = obj(raw, 'container');
  const runtime = container.runtime ?? 'none';
  const images = Array.isArray(container.images) ? container.images : [];
  if ((runtime === 'docker' || runtime === 'singularity') && images.length === 0) {
    add(['container', 'images'], `must list at least one image when container.runtime is "${runtime}"`);
  }
  if (runtime === 'none') {
    if (images.length > 0) add(['container', 'images'], 'must be empty when container.runtime is "none" (the program runs natively)');
    if (has(container, 'registry')) add(['container', 'registry'], 'not allowed when container.runtime is "none"');
  }
  images.forEach((img, i) => {
    if (typeof img === 'string' && images.indexOf(img) !== i) add(['container', 'images', i], `duplicate of container.images[${images.indexOf(img)}]`);
  });
  if (typeof container.pullConcurrency === 'number' && container.pullConcurrency > LIMITS.maxPullConcurrencyWithoutOptIn && container.allowAboveTen !== true) {
    add(
      ['container', 'pullConcurrency'],
      `must be at most ${LIMITS.maxPullConcurrencyWithoutOptIn} unless container.allowAboveTen is true (registries throttle parallel pulls)`,
    );
  }
  const registry = obj(container, 'registry');
  for (const k of Object.keys(registry)) {
    if (PLAIN_SECRET_KEY_RE.test(k)) add(['container', 'registry', k], PLAIN_PASSWORD_MESSAGE);
  }
  const identity = obj(registry, 'identity');
  for (const k of Object.keys(identity)) {
    if (PLAIN_SECRET_KEY_RE.test(k)) add(['container', 'registry', 'identity', k], PLAIN_PASSWORD_MESSAGE);
  }

  const data = obj(raw, 'data');
  const shard = obj(data, 'shardSizeMB');
  if (typeof shard.min === 'number' && typeof shard.max === 'number' && shard.min > shard.max) {
    add(['data', 'shardSizeMB', 'min'], `must not exceed data.shardSizeMB.max (${shard.max})`);
  }
  const staging = Array.isArray(data.stagingAccounts) ? data.stagingAccounts : [];
  staging.forEach((a, i) => {
    if (typeof a === 'string' && staging.indexOf(a) !== i) add(['data', 'stagingAccounts', i], `duplicate of data.stagingAccounts[${staging.indexOf(a)}]`);
  });

  const keep = obj(raw, 'cleanup').keepStagedData;
  const retention = typeof data.retention === 'string' ? data.retention : 'P2D';
  if (typeof keep === 'string') {
    const keepMs = parseIsoDuration(keep);
    const retentionMs = parseIsoDuration(retention);
    if (keepMs !== undefined && retentionMs !== undefined && keepMs > retentionMs) {
      add(['cleanup', 'keepStagedData'], `must not exceed data.retention (${retention}): staged data never outlives its retention`);
    }
  }

  if (isObj(raw.tags) && Object.keys(raw.tags).length > LIMITS.maxTags) {
    add(['tags'], `must have at most ${LIMITS.maxTags} entries`);
  }
  const env = obj(raw, 'mpi').env;
  if (isObj(env) && Object.keys(env).length > LIMITS.maxEnv) {
    add(['mpi', 'env'], `must have at most ${LIMITS.maxEnv} entries`);
  }
  issues.push(...launchIssues(raw), ...containerIssues(raw), ...dataSectionIssues(raw));
  issues.push(...schedulingIssues(raw));
  return issues;
}
