import { describe, expect, it } from '@jest/globals';
import { GatewayMetrics } from '../observability/metrics.js';
import { AsyncAnswers } from './async-answers.js';
import type { InquiryResponse, OpenInquiry } from './inquiry-in-flight.js';
import { RunningInquiries } from './running-inquiries.js';
import { SettleTimes } from './settle-times.js';

const config = { get: () => ({ timeoutMs: 1_000, advancedTimeoutMs: 1_000 }) } as never;
const ANSWER = { status: 200, trackId: 't' } as InquiryResponse;
const OPEN = {
  trackId: '00000000-0000-4000-8000-000000000001',
  request: { operation: 'iban', requestHandlingType: 'standard' },
  record: { createdAt: new Date().toISOString() },
} as OpenInquiry;

function deferred() {
  let resolve!: (value: InquiryResponse) => void;
  const promise = new Promise<InquiryResponse>((done) => (resolve = done));
  return { promise, resolve };
}

describe('RunningInquiries and AsyncAnswers', () => {
  it('a 202 leaves its settlement running: the drain waits for it', async () => {
    const running = new RunningInquiries(config);
    const answers = new AsyncAnswers(new SettleTimes(), running, new GatewayMetrics());
    const settlement = deferred();
    const answer = await running.track(answers.answer(OPEN, settlement.promise, 0));
    expect(answer).toMatchObject({
      status: 202,
      body: { trackId: OPEN.trackId, status: 'pending' },
      headers: { Location: `/v1/inquiries/${OPEN.trackId}`, 'Preference-Applied': 'respond-async', 'Retry-After': '1' },
    });
    running.stopAccepting();
    expect(running.accepting).toBe(false);
    let drained: number | undefined;
    const drain = running.drain().then((left) => (drained = left));
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBeUndefined();
    settlement.resolve(ANSWER);
    await drain;
    expect(drained).toBe(0);
  });

  it('an inquiry settled within the wait is answered as it is', async () => {
    const running = new RunningInquiries(config);
    const answers = new AsyncAnswers(new SettleTimes(), running, new GatewayMetrics());
    expect(await answers.answer(OPEN, Promise.resolve(ANSWER), 1_000)).toBe(ANSWER);
  });
});
