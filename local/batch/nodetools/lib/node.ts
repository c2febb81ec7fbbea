/**
 * Where the node tools keep their state on an emulated Batch node. Everything lives under the node's sandbox
 * (`AZ_BATCH_NODE_ROOT_DIR`), so deleting a node deletes its images and containers.
 */
import { hostname } from 'node:os';
import * as path from 'node:path';
import { CliError } from './errors';

export interface NodeContext {
  rootDir: string;
  nodeId: string;
  poolId: string;
  /** Identifies this node to the registry (X-Pull-Client) since all emulated nodes share 127.0.0.1. */
  clientKey: string;
  dockerDir: string;
  imagesDir: string;
  containersDir: string;
  singularityDir: string;
}

export function nodeContext(env: NodeJS.ProcessEnv = process.env): NodeContext {
  const rootDir = env.AZ_BATCH_NODE_ROOT_DIR;
  if (!rootDir) throw new CliError('AZ_BATCH_NODE_ROOT_DIR is not set: these node tools run only on an emulated Batch node', 125);
  const nodeId = env.AZ_BATCH_NODE_ID ?? path.basename(rootDir);
  const poolId = env.AZ_BATCH_POOL_ID ?? hostname();
  return {
    rootDir,
    nodeId,
    poolId,
    clientKey: `${poolId}/${nodeId}`,
    dockerDir: path.join(rootDir, 'docker'),
    imagesDir: path.join(rootDir, 'docker', 'images'),
    containersDir: path.join(rootDir, 'containers'),
    singularityDir: path.join(rootDir, 'singularity'),
  };
}
