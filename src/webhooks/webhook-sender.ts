import { Agent, request } from 'undici';
import type { WebhookEndpoint } from '../config/webhooks-config.js';
import { signedHeaders } from './webhook-signature.js';

/** A delivery's whole attempt, connection to answer (docs/api.md §9: a 2xx within 10 s). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** What is read of an answer's body before it is dropped: receivers' bodies are not used. */
const ANSWER_BYTES = 4_096;

/** An attempt's outcome: the HTTP status, or why there was none (a code, never a URL or value). */
export type AttemptResult = { status: number } | { error: string };

/**
 * Posts one event to one endpoint (undici): the URL only from configuration, redirects not
 * followed (a 3xx is a failure like any non-2xx), 10 s in all, signed for every key of the
 * endpoint with the delivery's id (the same on every retry) and this attempt's timestamp.
 */
export class WebhookSender {
  private readonly agent = new Agent({
    connectTimeout: DELIVERY_TIMEOUT_MS,
    headersTimeout: DELIVERY_TIMEOUT_MS,
    bodyTimeout: DELIVERY_TIMEOUT_MS,
  });

  async send(endpoint: WebhookEndpoint, id: string, body: string, now = Date.now()): Promise<AttemptResult> {
    const headers = signedHeaders(id, Math.floor(now / 1000), body, endpoint.keys);
    try {
      const answer = await request(endpoint.url.reveal(), {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'verification-gateway-webhooks', ...headers },
        dispatcher: this.agent,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      await answer.body.dump({ limit: ANSWER_BYTES }).catch(() => undefined);
      return { status: answer.statusCode };
    } catch (error) {
      const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
      return { error: typeof code === 'string' ? code : typeof name === 'string' ? name : 'error' };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
