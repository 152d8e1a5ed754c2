import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { requestLogFields, type InquiryLogFields, type RequestFacts } from '../observability/request-context.js';
import { AuthorizedUpstream } from '../token/authorized-upstream.js';
import { routeOf, type OperationDefinition } from './catalog/operation.js';
import type { OpenInquiry } from './inquiry-in-flight.js';
import { failureLogLine, failureOutcome, successOutcome, type InquiryOutcome } from './inquiry-outcome.js';
import { SettleTimes } from './settle-times.js';

/**
 * The call: one upstream inquiry with the stamped trackId (AuthorizedUpstream renews the token
 * once after a 401 and repeats it with the same trackId), its outcome counted and logged.
 */
@Injectable()
export class UpstreamCall {
  /** The context the inquiry's log lines have always carried (log queries select on it). */
  private readonly logger = new Logger('InquiryService');
  /** Seconds until the open circuit lets a trial call through, for `Retry-After`. */
  private readonly circuitRetryAfter: string;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly upstream: AuthorizedUpstream,
    private readonly metrics: GatewayMetrics,
    private readonly settleTimes: SettleTimes,
  ) {
    this.circuitRetryAfter = String(Math.ceil(config.get('upstream', { infer: true }).circuitResetMs / 1000));
    zeroInquirySeries(metrics, config.get('operations', { infer: true }));
  }

  /**
   * The outcome of the call; every failure becomes one (docs/api.md §3) rather than a rejection
   * (upstream-call.spec.ts).
   */
  async call({ caller, request, trackId, callBudget, facts }: OpenInquiry): Promise<InquiryOutcome> {
    const started = performance.now();
    const body = { ...request.fields, requestHandlingType: request.requestHandlingType, trackId };
    let outcome: InquiryOutcome;
    try {
      outcome = successOutcome(trackId, await this.upstream.inquire(request.operation, body, callBudget, facts));
    } catch (error) {
      const line = failureLogLine(error, trackId);
      this.logger[line.level]({ msg: line.message, ...requestLogFields(facts) });
      outcome = failureOutcome(error, trackId, this.circuitRetryAfter);
    }
    const upstreamMs = performance.now() - started;
    this.settleTimes.observe(request.requestHandlingType, upstreamMs);
    this.metrics.inquiries.inc({ operation: request.operation, status: outcome.status });
    this.logOutcome(
      {
        trackId,
        clientId: caller.clientId,
        operation: request.operation,
        requestHandlingType: request.requestHandlingType,
        outcome: outcome.status,
        upstreamMs: Math.round(upstreamMs),
      },
      outcome.response.status,
      facts,
    );
    return outcome;
  }

  /**
   * The trace of every possible charge, no personal data in it. Its facts go on the request's
   * access line, written when the answer is sent; a caller that hung up has had its line
   * already, so the inquiry then writes a line of its own (`"msg":"inquiry"`, same
   * `requestId`), as it does outside an HTTP request.
   */
  private logOutcome(fields: InquiryLogFields, status: number, facts?: RequestFacts): void {
    if (facts && !facts.accessLogged) facts.inquiry = fields;
    else this.logger.log({ msg: 'inquiry', ...requestLogFields(facts), ...fields, status });
  }
}

/**
 * The series alerts read about inquiries exist at 0 from start-up, so that increase() sees the
 * first event after a start (a lone `unknown` outcome, a burst of 502s between two scrapes):
 * a counter first scraped at 1 shows no rise (docs/operations.md, "Metrics").
 */
function zeroInquirySeries(metrics: GatewayMetrics, operations: readonly OperationDefinition[]): void {
  for (const definition of operations) {
    const operation = definition.name;
    for (const status of ['succeeded', 'failed', 'unknown'] as const) metrics.inquiries.inc({ operation, status }, 0);
    for (const [status, code] of INQUIRY_SERVER_ERRORS) {
      metrics.httpRequests.zero({ route: routeOf(definition), method: 'POST', status, code });
    }
  }
}

/** The 5xx answers of an inquiry (docs/api.md §3), as the request histogram labels them. */
const INQUIRY_SERVER_ERRORS: ReadonlyArray<[status: number, code: string]> = [
  [500, 'internal'],
  [502, 'upstream_error'],
  [503, 'upstream_unavailable'],
  [503, 'store_unavailable'],
  [504, 'upstream_timeout'],
];
