import { Pool, errors } from 'undici';
import type { TokenProvider } from '../token/token.provider.js';
import { readAnswer, type TrackingAnswer } from './tracking-answer.js';
import type { TrackingConfig } from '../config/tracking-config.js';

export interface TrackingUpstream {
  baseUrl: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * Asks the upstream's request-tracking service about one trackId (docs/api.md §8), with the
 * shared access token as inquiries use it: a 401 renews it once and asks again. Its own small
 * pool (GET as well as POST; never the inquiries' circuit breaker): a question is off every
 * inquiry's path. Bounded by UPSTREAM_TIMEOUT_MS and UPSTREAM_MAX_RESPONSE_BYTES.
 */
export class TrackingQuestions {
  private readonly pool: Pool;
  private readonly prefix: string;
  /** A lease outlives a question: two calls (a 401 renews and asks again) and a token's renewal. */
  readonly leaseSeconds: number;

  constructor(
    private readonly config: TrackingConfig,
    private readonly upstream: TrackingUpstream,
    private readonly tokens: TokenProvider,
  ) {
    const url = new URL(upstream.baseUrl);
    this.leaseSeconds = Math.ceil((3 * upstream.timeoutMs) / 1000) + 5;
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: 4,
      headersTimeout: upstream.timeoutMs,
      bodyTimeout: upstream.timeoutMs,
      connectTimeout: upstream.timeoutMs,
      maxResponseSize: upstream.maxResponseBytes,
    });
  }

  async ask(trackId: string): Promise<TrackingAnswer> {
    let token: string;
    try {
      token = this.tokens.heldAccessToken() ?? (await this.tokens.getAccessToken());
    } catch {
      return { result: 'not_asked' };
    }
    let answer = await this.send(trackId, token);
    if (answer.status === 401) {
      try {
        answer = await this.send(trackId, await this.tokens.renewAfterRejection(token));
      } catch {
        return { result: 'not_asked' };
      }
    }
    if (answer.status === 0) return { result: answer.timedOut ? 'timeout' : 'error' };
    return readAnswer(this.config, answer.status, answer.body);
  }

  private async send(trackId: string, token: string): Promise<{ status: number; body: string; timedOut?: boolean }> {
    const { method, trackIdAt } = this.config;
    const id = encodeURIComponent(trackId);
    const path =
      this.prefix +
      (trackIdAt === 'path' ? this.config.path.replace('{trackId}', id) : this.config.path) +
      (trackIdAt === 'query' ? `?trackId=${id}` : '');
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${token}` };
    if (method === 'POST') headers['content-type'] = 'application/json';
    try {
      const response = await this.pool.request({
        path,
        method,
        headers,
        ...(trackIdAt === 'body' ? { body: JSON.stringify({ trackId }) } : {}),
        signal: AbortSignal.timeout(this.upstream.timeoutMs),
      });
      return { status: response.statusCode, body: await response.body.text() };
    } catch (error) {
      return { status: 0, body: '', timedOut: isTimeout(error) };
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

function isTimeout(error: unknown): boolean {
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) return true;
  if (error instanceof errors.ConnectTimeoutError) return true;
  const name = (error as { name?: string } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}
