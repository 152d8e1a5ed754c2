import { Injectable } from '@nestjs/common';
import { GatewayMetrics } from '../observability/metrics.js';
import { LOCATION_HEADER, PREFERENCE_APPLIED_HEADER, RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import type { InquiryResponse, OpenInquiry } from './inquiry-in-flight.js';
import { JSON_CONTENT_TYPE } from './inquiry-outcome.js';
import type { RequestHandlingType } from './inquiry-record.js';
import { RunningInquiries, settledWithin } from './running-inquiries.js';
import { SettleTimes } from './settle-times.js';

/**
 * `Prefer: respond-async` (docs/api.md, "Asynchronous answers"): the answer itself if the
 * inquiry settles within the caller's wait, else 202 Accepted with where and when to read it.
 */
@Injectable()
export class AsyncAnswers {
  constructor(
    private readonly settleTimes: SettleTimes,
    private readonly running: RunningInquiries,
    private readonly metrics: GatewayMetrics,
  ) {}

  /**
   * Waits up to `waitMs` for `settled` (not at all for 0: `respond-async` alone); past it the
   * settlement goes on, owed (RunningInquiries.owe), and the caller gets 202.
   */
  async answer(inquiry: OpenInquiry, settled: Promise<InquiryResponse>, waitMs: number): Promise<InquiryResponse> {
    const answered = await settledWithin(settled, waitMs);
    if (answered) return answered;
    this.running.owe(settled);
    const { operation, requestHandlingType } = inquiry.request;
    this.metrics.inquiriesAccepted.inc({ operation });
    return this.accepted(inquiry.trackId, requestHandlingType, Date.parse(inquiry.record.createdAt));
  }

  /** 202 Accepted for `trackId`; `Retry-After` is SettleTimes' estimate from `startedAt` (default now). */
  accepted(trackId: string, handling: RequestHandlingType, startedAt?: number): InquiryResponse {
    return {
      status: 202,
      contentType: JSON_CONTENT_TYPE,
      trackId,
      body: { trackId, status: 'pending' },
      headers: {
        [LOCATION_HEADER]: `/v1/inquiries/${trackId}`,
        [PREFERENCE_APPLIED_HEADER]: 'respond-async',
        [RETRY_AFTER_HEADER]: String(this.settleTimes.secondsLeft(handling, startedAt)),
      },
      replayed: false,
    };
  }
}
