/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, spec/standard-webhooks.md): headers `webhook-id`,
 * `webhook-timestamp` (Unix seconds) and `webhook-signature` = `v1,` + base64 HMAC-SHA256 over
 * `<id>.<timestamp>.<body>` with the secret's bytes (base64 after `whsec_`). Signed with the specification's reference
 * library, so any Standard Webhooks verifier (svix, standardwebhooks in several languages) checks our deliveries.
 */
import { Webhook } from 'standardwebhooks';

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signWebhook(secret: string, id: string, body: string, at: Date): SignedHeaders {
  // The signature covers whole seconds: the header must carry the same truncated value.
  const seconds = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': new Webhook(secret).sign(id, new Date(seconds * 1000), body),
  };
}
