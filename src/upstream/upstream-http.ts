import { Pool, errors, type Dispatcher } from 'undici';
import type { RequestFacts } from '../observability/request-context.js';
import { endSpanWithError, type RequestTrace } from '../observability/tracing.js';
import { UpstreamError } from './upstream-error.js';

/** One answered HTTP exchange, body read completely (and within the size bound). */
export interface UpstreamHttpResponse {
  status: number;
  /** The `X-Track-Id` response header, if any (docs/upstream-api.md §2.2). */
  trackIdHeader?: string;
  body: string;
}

export interface UpstreamHttpSettings {
  baseUrl: string;
  /** Deadline of one call, from the moment it is made until its answer is read (unless the call sets its own). */
  timeoutMs: number;
  /** The longest deadline a call may set (undici's backstops are this long); default `timeoutMs`. */
  longestTimeoutMs?: number;
  /** Largest response body read; a larger one fails the call as `malformed`. */
  maxResponseBytes: number;
  /** Keep-alive connections to the upstream (undici's `connections`). */
  connections?: number;
}

/** Our own per-call deadline, told apart from undici's errors by its code. */
const DEADLINE_CODE = 'VGW_UPSTREAM_DEADLINE';

/** Time limits: ours, undici's own (headers, body, connect) and the kernel's. */
const TIMEOUT_CODES = new Set([
  DEADLINE_CODE,
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

/**
 * Whether the upstream may have seen the request decides whether it may have charged it
 * (docs/upstream-api.md §4.4 rules 5 and 9), so the proof is strict: `not_sent` only when the
 * request body was never handed to the socket (`requestWritten` false: the connection was
 * refused, the name did not resolve, the host was unreachable, the connect timed out, or the
 * call expired while queued, so the upstream cannot hold a complete request). Once written,
 * every failure is `outcome_unknown` (a time limit sets `timedOut`), except an answer that
 * arrived but cannot be read: larger than the bound, or not HTTP at all (`malformed`, which
 * is just as unknown for the charge).
 */
export function classifyTransportError(error: unknown, requestWritten: boolean): UpstreamError {
  const code = errorCode(error);
  const timedOut = code !== undefined && TIMEOUT_CODES.has(code);
  if (!requestWritten) return new UpstreamError('not_sent', timedOut ? { timedOut } : {});
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return new UpstreamError('malformed', { responseTooLarge: true });
  if (error instanceof errors.HTTPParserError || code?.startsWith('HPE_')) return new UpstreamError('malformed');
  return new UpstreamError('outcome_unknown', { timedOut });
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const causeCode = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof causeCode === 'string' ? causeCode : undefined;
}

/**
 * POSTs JSON to the upstream over a keep-alive undici `Pool` (docs/decisions/0001-undici-over-axios.md: axios cost
 * more than half of the gateway's CPU per inquiry). Each call has one deadline timer; it
 * tracks whether its body was written to the socket, which is what separates "never sent"
 * from "outcome unknown" when it fails. Response bodies beyond `maxResponseBytes` are not
 * read (undici's `maxResponseSize` stops the parser and drops the connection).
 */
export class UpstreamHttp {
  private readonly pool: Pool;
  private readonly pathPrefix: string;
  private readonly timeoutMs: number;
  private readonly host: string;

  constructor(settings: UpstreamHttpSettings) {
    const url = new URL(settings.baseUrl);
    this.host = url.hostname;
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.timeoutMs = settings.timeoutMs;
    this.pool = new Pool(url.origin, {
      connections: settings.connections ?? 128,
      pipelining: 1,
      // Backstops behind the per-call deadline, never longer than the longest one.
      connectTimeout: settings.timeoutMs,
      headersTimeout: settings.longestTimeoutMs ?? settings.timeoutMs,
      bodyTimeout: settings.longestTimeoutMs ?? settings.timeoutMs,
      maxResponseSize: settings.maxResponseBytes,
    });
  }

  /**
   * Resolves with any answered status; rejects only with a classified `UpstreamError`. `request`:
   * the facts of the request the call is made for, whose trace context the upstream receives.
   * `timeoutMs`: this call's deadline, instead of the settings' one.
   */
  post(
    path: string,
    body: string,
    accessToken: string | undefined,
    request?: RequestFacts,
    timeoutMs = this.timeoutMs,
  ): Promise<UpstreamHttpResponse> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (accessToken) headers.authorization = `Bearer ${accessToken}`;
    if (request?.trace) return this.tracedPost(path, body, headers, request.trace, timeoutMs);
    if (request?.callerTraceContext) Object.assign(headers, request.callerTraceContext);
    return this.send(path, body, headers, timeoutMs);
  }

  private send(
    path: string,
    body: string,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<UpstreamHttpResponse> {
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(resolve, reject);
      exchange.timer = setTimeout(() => exchange.expire(), timeoutMs);
      this.pool.dispatch({ method: 'POST', path: this.pathPrefix + path, headers, body }, exchange);
    });
  }

  /** The call as a CLIENT span of the request, whose context the upstream receives as `traceparent`. */
  private async tracedPost(
    path: string,
    body: string,
    headers: Record<string, string>,
    { span: parent, tracing }: RequestTrace,
    timeoutMs: number,
  ): Promise<UpstreamHttpResponse> {
    const span = tracing.startClientSpan(parent, `upstream POST ${path}`, {
      'http.request.method': 'POST',
      'url.path': this.pathPrefix + path,
      'server.address': this.host,
    });
    tracing.inject(span, headers);
    try {
      const response = await this.send(path, body, headers, timeoutMs);
      span.setAttribute('http.response.status_code', response.status);
      if (response.status >= 500) endSpanWithError(span, String(response.status));
      else span.end();
      return response;
    } catch (error) {
      endSpanWithError(span, error instanceof UpstreamError ? error.kind : 'unknown');
      throw error;
    }
  }

  /** Closes every connection, in-flight calls included (after the HTTP server has drained). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

/**
 * One call as undici's dispatch handler sees it (the controller interface; undici reports
 * `onBodySent` to it as well, when the body is handed to the socket).
 */
class Exchange implements Dispatcher.DispatchHandler {
  timer: NodeJS.Timeout | undefined;
  /**
   * The controller itself, not a closure over it: with the closure V8 pretenured allocations on
   * this path and each call's objects survived young collections (+2.4 KB promoted per inquiry,
   * the GC helpers' CPU up; docs/performance.md, "The steps restructure and the toolchain").
   */
  private controller: Dispatcher.DispatchController | undefined;
  private requestWritten = false;
  private settled = false;
  private status = 0;
  private trackIdHeader: string | undefined;
  private readonly chunks: Buffer[] = [];

  constructor(
    private readonly resolve: (response: UpstreamHttpResponse) => void,
    private readonly reject: (error: UpstreamError) => void,
  ) {}

  /** The deadline: the call fails now; undici drops the request or its connection. */
  expire(): void {
    const error = Object.assign(new Error('upstream deadline exceeded'), { code: DEADLINE_CODE });
    this.fail(error);
    this.controller?.abort(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Expired while queued for a connection: abort before anything is written. undici then
    // drops the connection it was handed (its public interface cannot take a queued call out of
    // the queue), so the next call opens a new one.
    if (this.settled) controller.abort(new Error('upstream call already failed'));
    else this.controller = controller;
  }

  onBodySent(): void {
    this.requestWritten = true;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: the answer follows
    this.status = statusCode;
    // undici 8 hands header values decoded as latin1; the upstream writes UTF-8
    // (test/upstream-transport.integration.spec.ts, 'X-Track-Id: non-ASCII bytes decoded as before').
    const trackId = headers['x-track-id'];
    const raw = Array.isArray(trackId) ? trackId[trackId.length - 1] : trackId;
    this.trackIdHeader = raw === undefined ? undefined : Buffer.from(raw, 'latin1').toString('utf8');
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.resolve({ status: this.status, trackIdHeader: this.trackIdHeader, body: body.toString('utf8') });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.reject(classifyTransportError(error, this.requestWritten));
  }
}
