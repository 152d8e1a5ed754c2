import { createHmac } from 'node:crypto';
import type { Secret } from '../config/secret.js';

/** The headers of one Standard Webhooks 1.0 delivery. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Standard Webhooks 1.0 signing: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under each
 * key (the base64 after `whsec_`), space-separated, so that a receiver holding either secret of a
 * rotation verifies it. `id` is the message's id, the same on every retry (the receiver
 * deduplicates on it); `timestamp` is this attempt's, in seconds (the receiver refuses an old
 * one: a replayed delivery fails). webhook-signature.spec.ts checks it with `standardwebhooks`.
 */
export function signedHeaders(
  id: string,
  timestampSeconds: number,
  body: string,
  keys: readonly Secret[],
): SignedHeaders {
  const timestamp = String(timestampSeconds);
  const signatures = keys.map(
    (key) =>
      `v1,${createHmac('sha256', Buffer.from(key.reveal(), 'base64')).update(`${id}.${timestamp}.${body}`).digest('base64')}`,
  );
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}
