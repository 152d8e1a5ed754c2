import { Injectable, Logger, Optional } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import CircuitBreaker from 'opossum';
import type { AppConfig } from '../config/app-config.js';
import type { InquiryOperation } from './inquiry-operation.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { requestLogFields, type RequestFacts } from '../observability/request-context.js';
import {
  fieldErrors,
  isTokenData,
  parseEnvelope,
  type UpstreamMeta,
  type UpstreamTokenData,
} from './upstream-envelope.js';
import { UpstreamError } from './upstream-error.js';
import { UpstreamHttp } from './upstream-http.js';
import { UpstreamCredentials } from './upstream-credentials.js';

export const TOKEN_PATH = '/api/v5/Authentication/GetToken';

/** Outcomes of an inquiry call, as vgw_upstream_call_duration_seconds labels them (see post()). */
const INQUIRY_OUTCOMES = [
  'success',
  'not_sent',
  'malformed',
  'timeout',
  'dropped',
  'http_400',
  'http_401',
  'http_402',
  'http_403',
  'http_409',
  'http_422',
  'http_500',
  'http_502',
  'http_503',
] as const;

/** GetToken request bodies, §4.1 variants A (credentials) and B (renewal). */
export type TokenGrant = { kind: 'credentials' } | { kind: 'refresh'; refreshToken: string };

export interface UpstreamSuccess {
  trackId?: string;
  meta: UpstreamMeta;
  data: unknown;
}

/**
 * The only place that talks to the upstream. Its transport (`UpstreamHttp`: an undici pool,
 * keep-alive, one deadline per call, bounded responses) classifies failures; this class turns
 * every answer into a typed success or `UpstreamError`, and is the only reader of the API
 * password. It logs paths and outcomes, never bodies.
 */
@Injectable()
export class UpstreamClient {
  private readonly logger = new Logger(UpstreamClient.name);
  private readonly http: UpstreamHttp;
  private readonly settings: AppConfig['upstream'];
  /**
   * Inquiries pass through a circuit breaker: when half of at least 10 calls within 10 s
   * fail (transport errors, malformed or 5xx answers; business 4xx answers do not count),
   * further inquiries are refused at once, without reaching the upstream, until a trial call
   * after `UPSTREAM_CIRCUIT_RESET_MS` succeeds. GetToken has its own backoff instead.
   */
  private readonly circuit: CircuitBreaker<
    [InquiryOperation, Record<string, unknown>, string, RequestFacts | undefined, number],
    UpstreamSuccess
  >;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly metrics: GatewayMetrics,
    @Optional() private readonly credentials?: UpstreamCredentials,
  ) {
    this.settings = config.get('upstream', { infer: true });
    // Each operation's upstream path, from the catalog (docs/api.md §10): the built-ins' too.
    const operations = config.get('operations', { infer: true });
    const paths = new Map(operations.map((operation) => [operation.name, operation.upstreamPath]));
    // Every inquiry outcome an alert reads exists at 0 from start-up, so increase() sees the
    // first one after a start (docs/operations.md, "Metrics"). http_<status> is open-ended: the
    // statuses the contract and the alerts name are listed; others appear when first seen.
    for (const { name: operation } of operations) {
      for (const outcome of INQUIRY_OUTCOMES) metrics.upstreamCalls.zero({ operation, outcome });
    }
    this.http = new UpstreamHttp({
      baseUrl: this.settings.baseUrl,
      timeoutMs: this.settings.timeoutMs,
      longestTimeoutMs: Math.max(this.settings.timeoutMs, this.settings.advancedTimeoutMs),
      maxResponseBytes: this.settings.maxResponseBytes,
    });
    this.circuit = new CircuitBreaker(
      (
        operation: InquiryOperation,
        body: Record<string, unknown>,
        accessToken: string,
        request: RequestFacts | undefined,
        timeoutMs: number,
      ) => this.post(paths.get(operation) as string, body, accessToken, operation, request, timeoutMs),
      {
        timeout: false, // UpstreamHttp enforces UPSTREAM_TIMEOUT_MS itself
        errorThresholdPercentage: 50,
        volumeThreshold: 10,
        rollingCountTimeout: 10_000,
        resetTimeout: this.settings.circuitResetMs,
        // No latency percentiles nor snapshots: with them every failed call sorts the whole
        // 10 s window (milliseconds of CPU per failure at load); counts are all it needs.
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
        // true = not a failure of the upstream: it answered, and the answer is a business one.
        errorFilter: (error: unknown) =>
          error instanceof UpstreamError && error.kind === 'rejected' && (error.httpStatus ?? 500) < 500,
      },
    );
    this.circuit.on('open', () => {
      this.metrics.circuitOpen.set(1);
      this.logger.error(`upstream circuit OPEN: inquiries are refused for ${this.settings.circuitResetMs} ms`);
    });
    this.circuit.on('halfOpen', () => this.logger.warn('upstream circuit half-open: letting a trial inquiry through'));
    this.circuit.on('close', () => {
      this.metrics.circuitOpen.set(0);
      this.logger.log('upstream circuit closed');
    });
  }

  /** The circuit breaker's state, for the console's status (docs/api.md §6). */
  get circuitState(): 'closed' | 'open' | 'half-open' {
    if (this.circuit.halfOpen) return 'half-open';
    return this.circuit.opened ? 'open' : 'closed';
  }

  /**
   * A step of the shutdown sequence (src/http/shutdown-sequence.ts), after every accepted
   * inquiry has settled: in-flight inquiries keep their connections and the circuit until then.
   */
  async close(): Promise<void> {
    this.circuit.shutdown();
    await this.http.close();
  }

  /** Variant A's body, from the credentials in force now (they may have been rotated). */
  private credentialsBody(): { username: string; password: string } {
    const { username, password } = this.credentials?.current() ?? this.settings;
    return { username: username.reveal(), password: password.reveal() };
  }

  /** §4.1: obtain (variant A) or renew (variant B) a token pair. */
  async getToken(grant: TokenGrant): Promise<UpstreamTokenData> {
    const body = grant.kind === 'credentials' ? this.credentialsBody() : { refreshToken: grant.refreshToken };
    const result = await this.post(TOKEN_PATH, body, undefined, `token:${grant.kind}`);
    if (!isTokenData(result.data)) {
      throw new UpstreamError('malformed', { httpStatus: 200, upstreamMessage: 'token data missing' });
    }
    return result.data;
  }

  /**
   * §4.2: an inquiry, with the gateway-stamped trackId already in `body`. `timeoutMs`: this
   * call's deadline (the inquiry's handling type and what is left of its budget decide it).
   */
  inquire(
    operation: InquiryOperation,
    body: Record<string, unknown>,
    accessToken: string,
    request: RequestFacts | undefined,
    timeoutMs: number,
  ): Promise<UpstreamSuccess> {
    return this.circuit.fire(operation, body, accessToken, request, timeoutMs).catch(asUpstreamError);
  }

  private async post(
    path: string,
    body: unknown,
    accessToken: string | undefined,
    label: string,
    request?: RequestFacts,
    timeoutMs?: number,
  ): Promise<UpstreamSuccess> {
    const started = performance.now();
    let outcome = 'error';
    try {
      const response = await this.http.post(path, JSON.stringify(body), accessToken, request, timeoutMs);
      const envelope = parseEnvelope(response.body);
      if (!envelope) {
        outcome = 'malformed';
        throw new UpstreamError('malformed', { httpStatus: response.status, trackId: response.trackIdHeader });
      }
      const { meta } = envelope;
      const trackId = meta.trackId ?? response.trackIdHeader;
      if (response.status >= 200 && response.status < 300 && meta.isSuccess && meta.code === 0) {
        outcome = 'success';
        return { trackId, meta, data: envelope.data };
      }
      outcome = `http_${response.status}`;
      throw new UpstreamError('rejected', {
        httpStatus: response.status,
        code: meta.code,
        errorType: meta.errorType ?? undefined,
        upstreamMessage: meta.errorMessage ?? meta.message,
        fieldErrors: fieldErrors(meta.errors),
        trackId,
      });
    } catch (error) {
      if (outcome === 'error' && error instanceof UpstreamError) {
        // A transport failure, already classified by UpstreamHttp.
        outcome =
          error.kind === 'not_sent'
            ? 'not_sent'
            : error.kind === 'malformed'
              ? 'malformed'
              : error.details.timedOut
                ? 'timeout'
                : 'dropped';
      }
      throw error;
    } finally {
      const seconds = (performance.now() - started) / 1000;
      this.metrics.observeCall(label, outcome, seconds);
      this.logger.debug({
        msg: `POST ${path} -> ${outcome} in ${Math.round(seconds * 1000)} ms`,
        ...requestLogFields(request),
      });
    }
  }
}

/** The breaker's own refusals (open, shut down) as the `not_sent` they are; other errors unchanged. */
function asUpstreamError(error: unknown): never {
  const code = (error as { code?: string }).code;
  if (code === 'EOPENBREAKER') throw new UpstreamError('not_sent', { circuitOpen: true });
  if (code === 'ESHUTDOWN') throw new UpstreamError('not_sent');
  throw error;
}
