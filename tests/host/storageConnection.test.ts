/**
 * How the local host resolves a storage connection (its own AzureWebJobsStorage, a binding's `connection`), as the
 * Functions host does: a connection string first, else the identity-based settings under `<name>__`. Pure: the
 * environment is passed in, no request is made.
 */
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { resolveStorageConnection } from '../../local/host/storageConnection';

const AZURITE = {
  AzureWebJobsStorage__blobServiceUri: 'https://127.0.0.1:40001/devstoreaccount1',
  AzureWebJobsStorage__queueServiceUri: 'https://127.0.0.1:40002/devstoreaccount1/',
  AzureWebJobsStorage__tableServiceUri: 'https://127.0.0.1:40003/devstoreaccount1',
  AzureWebJobsStorage__credential: 'managedidentity',
  AzureWebJobsStorage__clientId: '0c6a1a5e-0000-4000-a000-000000000001',
};

describe('resolveStorageConnection', () => {
  it('takes the connection string when the setting holds one (also with the AzureWebJobs prefix)', () => {
    expect(resolveStorageConnection(undefined, 'queue', 'test', { AzureWebJobsStorage: 'UseDevelopmentStorage=true', ...AZURITE })).toEqual({
      kind: 'connectionString',
      name: 'AzureWebJobsStorage',
      connectionString: 'UseDevelopmentStorage=true',
    });
    expect(resolveStorageConnection('Other', 'queue', 'test', { AzureWebJobsOther: 'UseDevelopmentStorage=true' })).toMatchObject({
      kind: 'connectionString',
      name: 'AzureWebJobsOther',
    });
  });

  it('otherwise an identity-based connection from the service URIs, with the managed identity the settings name', () => {
    const conn = resolveStorageConnection(undefined, 'table', 'test', AZURITE);
    expect(conn).toMatchObject({
      kind: 'identity',
      name: 'AzureWebJobsStorage',
      serviceUris: {
        blob: AZURITE.AzureWebJobsStorage__blobServiceUri,
        queue: 'https://127.0.0.1:40002/devstoreaccount1',
        table: AZURITE.AzureWebJobsStorage__tableServiceUri,
      },
    });
    expect(conn.kind === 'identity' && conn.credential).toBeInstanceOf(ManagedIdentityCredential);
    // One credential (and token cache) per identity description.
    expect(conn.kind === 'identity' && conn.credential).toBe(
      (resolveStorageConnection(undefined, 'blob', 'again', AZURITE) as { credential: unknown }).credential,
    );
    // Without __credential: the DefaultAzureCredential chain (a developer's identity on a workstation).
    const dev = resolveStorageConnection(undefined, 'blob', 'test', { AzureWebJobsStorage__blobServiceUri: AZURITE.AzureWebJobsStorage__blobServiceUri });
    expect(dev.kind === 'identity' && dev.credential).toBeInstanceOf(DefaultAzureCredential);
  });

  it("__accountName means the public Azure endpoints, for AzureWebJobsStorage only; __serviceUri serves a binding's one service", () => {
    expect(resolveStorageConnection(undefined, 'queue', 'test', { AzureWebJobsStorage__accountName: 'sthost' })).toMatchObject({
      serviceUris: {
        blob: 'https://sthost.blob.core.windows.net',
        queue: 'https://sthost.queue.core.windows.net',
        table: 'https://sthost.table.core.windows.net',
      },
    });
    expect(() => resolveStorageConnection('Jobs', 'queue', 'Function "f" queue trigger', { Jobs__accountName: 'stjobs' })).toThrow(
      /Function "f" queue trigger: the storage connection setting "Jobs" is not set/,
    );
    expect(resolveStorageConnection('Jobs', 'queue', 'test', { Jobs__serviceUri: 'https://stjobs.queue.core.windows.net' })).toMatchObject({
      kind: 'identity',
      name: 'Jobs',
      serviceUris: { queue: 'https://stjobs.queue.core.windows.net' },
    });
  });

  it('refuses what would send a token over http, an unknown credential kind, and a connection without the service asked for', () => {
    expect(() =>
      resolveStorageConnection(undefined, 'queue', 'test', { ...AZURITE, AzureWebJobsStorage__queueServiceUri: 'http://127.0.0.1:40002/devstoreaccount1' }),
    ).toThrow(/AzureWebJobsStorage__queueServiceUri must be an https URI/);
    expect(() => resolveStorageConnection(undefined, 'queue', 'test', { ...AZURITE, AzureWebJobsStorage__credential: 'clientsecret' })).toThrow(
      /AzureWebJobsStorage__credential must be "managedidentity"/,
    );
    expect(() =>
      resolveStorageConnection(undefined, 'table', 'host storage', { AzureWebJobsStorage__blobServiceUri: AZURITE.AzureWebJobsStorage__blobServiceUri }),
    ).toThrow(/host storage: the identity-based connection "AzureWebJobsStorage" has no table service URI/);
    expect(() => resolveStorageConnection(undefined, 'queue', 'host storage', {})).toThrow(/not set in the environment/);
  });
});
