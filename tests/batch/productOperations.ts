/**
 * The Batch operations the product calls, read from the adapter's sources (every `ctx.client.<group>.<method>(`
 * in shared/adapters/batch), as spec operationIds: pool.add → Pool_Add, computeNode.list → ComputeNode_List,
 * job.deleteMethod → Job_Delete, task.listNext → Task_List (a next page is the same operation).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ADAPTER_DIR = path.join(__dirname, '..', '..', 'shared', 'adapters', 'batch');

/** The management-plane adapter's files: their calls are management operations (productArmOperations). */
const ARM_FILES = ['armClient.ts', 'armPools.ts'];

export function productOperations(): string[] {
  const ops = new Set<string>();
  for (const file of readdirSync(ADAPTER_DIR).filter((f) => f.endsWith('.ts') && !ARM_FILES.includes(f))) {
    const text = readFileSync(path.join(ADAPTER_DIR, file), 'utf8');
    for (const m of text.matchAll(/ctx\.client\.(\w+)\.(\w+)\(/g)) {
      const group = m[1][0].toUpperCase() + m[1].slice(1);
      const method = m[2].replace(/^deleteMethod$/, 'delete').replace(/Next$/, '');
      ops.add(`${group}_${method[0].toUpperCase()}${method.slice(1)}`);
    }
  }
  return [...ops].sort();
}

/**
 * The management-plane operations the product calls (`ctx.client.poolOperations.<method>(` in shared/adapters/batch), as
 * operationIds of BatchManagement-2023-11-01: poolOperations.create → Pools_Create.
 */
export function productArmOperations(): string[] {
  const ops = new Set<string>();
  for (const file of ARM_FILES) {
    const text = readFileSync(path.join(ADAPTER_DIR, file), 'utf8');
    for (const m of text.matchAll(/ctx\.client\.poolOperations\.(\w+)\(/g)) {
      const method = m[1].replace(/^listByBatchAccount(Next)?$/, 'listByBatchAccount').replace(/^begin(\w+?)(AndWait)?$/, '$1');
      ops.add(`Pools_${method[0].toUpperCase()}${method.slice(1)}`);
    }
  }
  return [...ops].sort();
}
