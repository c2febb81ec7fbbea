/**
 * How an in-process @azure/identity credential trusts the local issuer's self-signed certificate: a pipeline
 * policy that sends the credential's requests through an https agent holding that certificate (child processes
 * use NODE_EXTRA_CA_CERTS=<caFile> instead). Local tooling only: in Azure the issuer's certificate is public.
 */
import { Agent } from 'node:https';
import type { TokenCredentialOptions } from '@azure/identity';

export function trustingLocalIssuer(caCert: string): Pick<TokenCredentialOptions, 'additionalPolicies'> {
  // No keep-alive: an idle pooled socket would hold a finished process (or a test run) open.
  const agent = new Agent({ ca: caCert, keepAlive: false });
  return {
    additionalPolicies: [
      {
        position: 'perCall',
        policy: {
          name: 'localIssuerCertificate',
          sendRequest: (request, next) => {
            request.agent = agent;
            return next(request);
          },
        },
      },
    ],
  };
}
