import { Injectable } from '@nestjs/common';
import { AnswerKeeping } from './answer-keeping.js';
import type { InquiryResponse, OpenInquiry } from './inquiry-in-flight.js';
import { InquirySettlement } from './inquiry-settlement.js';
import { UpstreamCall } from './upstream-call.js';

/**
 * The steps after the opening: call the upstream, then settle, with what reuse adds to the
 * settlement (AnswerKeeping: keep or release the answer, or serve a stale one).
 */
@Injectable()
export class InquiryCall {
  constructor(
    private readonly upstream: UpstreamCall,
    private readonly keeping: AnswerKeeping,
    private readonly settlement: InquirySettlement,
  ) {}

  /** The call turns every failure into an outcome; the settlement owes what it cannot store. */
  async callAndSettle(open: OpenInquiry): Promise<InquiryResponse> {
    const outcome = await this.upstream.call(open);
    return this.settlement.settle(open, outcome, this.keeping.after(open, outcome));
  }
}
