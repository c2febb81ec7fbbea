/**
 * What the Batch emulator needs from the tenant to give pools an identity (implemented by the local identity
 * service, wired in local/supervisor/services.ts): the identity behind an ARM id, and an instance metadata service
 * for a pool's nodes. The emulator holds no key and signs no token itself.
 */
export interface NodeIdentityProvider {
  /** The identity's ids, or undefined when the subscription has no user-assigned identity with this ARM id. */
  lookup(resourceId: string): { resourceId: string; clientId: string; principalId: string } | undefined;
  /** An IMDS endpoint (base URL for AZURE_POD_IDENTITY_AUTHORITY_HOST) serving these identities, until closed. */
  openImds(resourceIds: string[]): { endpoint: string; close(): void };
}
