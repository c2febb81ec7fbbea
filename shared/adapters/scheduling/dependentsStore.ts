/**
 * The dependents index: for each job, the jobs that wait on it (spec.dependsOn), written at intake before the waiting
 * job's orchestration starts, so the end of a job can wake exactly its dependents (the JobDependents table,
 * PartitionKey = the job waited on, RowKey = the waiting job).
 */
import type { TokenCredential } from '@azure/core-auth';
import { odata, TableClient } from '@azure/data-tables';

export const DEFAULT_DEPENDENTS_TABLE = 'JobDependents';

export class DependentsStore {
  constructor(private readonly table: TableClient) {}

  static fromConnectionString(connectionString: string, table = DEFAULT_DEPENDENTS_TABLE): DependentsStore {
    const allowInsecureConnection = /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString);
    return new DependentsStore(TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection }));
  }

  static fromTableEndpoint(endpoint: string, credential: TokenCredential, table = DEFAULT_DEPENDENTS_TABLE): DependentsStore {
    return new DependentsStore(new TableClient(endpoint, table, credential, { allowInsecureConnection: endpoint.startsWith('http://') }));
  }

  async ensureTable(): Promise<void> {
    await this.table.createTable();
  }

  /** Records that `dependent` waits on `parent` (idempotent). */
  async add(parent: string, dependent: string): Promise<void> {
    await this.table.upsertEntity({ partitionKey: parent, rowKey: dependent }, 'Replace');
  }

  /** The jobs waiting on `parent`. */
  async dependentsOf(parent: string): Promise<string[]> {
    const out: string[] = [];
    const rows = this.table.listEntities<Record<string, unknown>>({ queryOptions: { filter: odata`PartitionKey eq ${parent}`, select: ['RowKey'] } });
    for await (const e of rows) out.push(String(e.rowKey));
    return out;
  }
}
