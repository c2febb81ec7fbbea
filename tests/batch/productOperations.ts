/**
 * The Batch operations the product calls, read from the adapter's sources (every `ctx.client.<group>.<method>(`
 * in shared/batch), as spec operationIds: pool.add → Pool_Add, computeNode.list → ComputeNode_List,
 * job.deleteMethod → Job_Delete, task.listNext → Task_List (a next page is the same operation).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ADAPTER_DIR = path.join(__dirname, '..', '..', 'shared', 'batch');

export function productOperations(): string[] {
  const ops = new Set<string>();
  for (const file of readdirSync(ADAPTER_DIR).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(ADAPTER_DIR, file), 'utf8');
    for (const m of text.matchAll(/ctx\.client\.(\w+)\.(\w+)\(/g)) {
      const group = m[1][0].toUpperCase() + m[1].slice(1);
      const method = m[2].replace(/^deleteMethod$/, 'delete').replace(/Next$/, '');
      ops.add(`${group}_${method[0].toUpperCase()}${method.slice(1)}`);
    }
  }
  return [...ops].sort();
}
