/**
 * Storage accounts served by the local Azurite and the connection strings that address them.
 * Keys are fixed so that a stack restarted on the same data folder keeps working with old SAS URLs.
 */

export interface StorageAccount {
  name: string;
  /** Base64 account key (Azurite accepts any base64 string). */
  key: string;
}

/** Azurite's well-known development account (documented key, same on every machine). */
export const DEV_STORE_ACCOUNT: StorageAccount = {
  name: 'devstoreaccount1',
  key: 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==',
};

/** Staging accounts the shard planner spreads data over locally (keys: sha512 of "hpc-mpi-local-stageN"). */
export const STAGING_ACCOUNTS: readonly StorageAccount[] = [
  { name: 'stage1', key: 'iP1hUFknqCN7gxP+7xSIjeIoSGvNltbfti1tTRNueBVhg+HybSH7NqEyiiSCnVlzpEujDgOpVAbiAHxvoXHTcA==' },
  { name: 'stage2', key: 'RvpWz36rc6Sb1iW3wsgq5YbWRtleX2Ghej6XvvNe4lYWwCMsUe9ZI/bFE1yT6Irh82/kyWVtf5y6g7txPfzFYg==' },
  { name: 'stage3', key: 'oJPq44mkfDUgi8gMIJaZ85KRuyvceSJhrndJkegAPcD42SLYWpT1kx2Z4TS8B/IaIo9aoYSx/IllCU2NJ7UqGA==' },
  { name: 'stage4', key: 'bROwIAEBROAw6iwE3xMUAqga06xr4k/kqkuhcTS4Mpq0pk6nlV+nq4FikegcXA8RTewKgjR0aAWf8ONi1U6a0w==' },
];

/**
 * The account users keep their data in (inputs, start-task files, outputs): jobs may name it (DATA_ACCOUNTS), while
 * the host storage (devstoreaccount1) and the staging accounts are the app's own and never reachable from a spec.
 * Key: sha512 of "hpc-mpi-local-data1".
 */
export const DATA_ACCOUNT: StorageAccount = {
  name: 'data1',
  key: 'zgOKgNf8J+YjrpEqWbFNua6RfuuadxYv/Lx6nfhL8GbXc9LXsaYt/5YwP6XozYdBhsvzrjVIIROD2LJZKei6sg==',
};

/** What `startAzurite` serves when no accounts are given: the dev account first, then the staging and data accounts. */
export const DEFAULT_ACCOUNTS: readonly StorageAccount[] = [DEV_STORE_ACCOUNT, ...STAGING_ACCOUNTS, DATA_ACCOUNT];

/** The AZURITE_ACCOUNTS environment value: `name:key;name:key`. */
export function azuriteAccountsEnv(accounts: readonly StorageAccount[]): string {
  return accounts.map((a) => `${a.name}:${a.key}`).join(';');
}

export interface ServicePorts {
  host: string;
  blob: number;
  queue: number;
  table: number;
}

/**
 * Path-style endpoint of one service for one account, as Azurite addresses accounts (first path segment): http, or
 * https when Azurite serves keyless.
 */
export function serviceEndpoint(ports: ServicePorts, service: 'blob' | 'queue' | 'table', account: string, protocol: 'http' | 'https' = 'http'): string {
  return `${protocol}://${ports.host}:${ports[service]}/${account}`;
}

/** A full connection string (no `UseDevelopmentStorage`, so it works with any port and account). */
export function connectionStringFor(ports: ServicePorts, account: StorageAccount, protocol: 'http' | 'https' = 'http'): string {
  return (
    [
      `DefaultEndpointsProtocol=${protocol}`,
      `AccountName=${account.name}`,
      `AccountKey=${account.key}`,
      `BlobEndpoint=${serviceEndpoint(ports, 'blob', account.name, protocol)}`,
      `QueueEndpoint=${serviceEndpoint(ports, 'queue', account.name, protocol)}`,
      `TableEndpoint=${serviceEndpoint(ports, 'table', account.name, protocol)}`,
    ].join(';') + ';'
  );
}
