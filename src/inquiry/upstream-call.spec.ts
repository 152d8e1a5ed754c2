import { describe, expect, it } from '@jest/globals';
import { BUILT_IN_OPERATIONS } from './catalog/built-in-operations.js';
import { Logger } from '@nestjs/common';
import type { RequestFacts } from '../observability/request-context.js';
import { GatewayMetrics } from '../observability/metrics.js';
import type { OpenInquiry } from './inquiry-in-flight.js';
import { SettleTimes } from './settle-times.js';
import { UpstreamCall } from './upstream-call.js';

const OPEN = {
  caller: { clientId: 'svc-a' },
  trackId: '00000000-0000-4000-8000-000000000001',
  request: { operation: 'iban', requestHandlingType: 'standard', fields: { iban: 'IR00' } },
  callBudget: { callTimeoutMs: 1_000, deadline: Date.now() + 10_000 },
} as unknown as OpenInquiry;

function calling(inquire: () => Promise<unknown>) {
  const metrics = new GatewayMetrics();
  const config = {
    get: (name: string) => (name === 'operations' ? BUILT_IN_OPERATIONS : { circuitResetMs: 1_000 }),
  } as never;
  return { metrics, call: new UpstreamCall(config, { inquire } as never, metrics, new SettleTimes()) };
}

Logger.overrideLogger(false);

describe('UpstreamCall', () => {
  it('sends the stamped trackId, and puts the outcome on the request access line', async () => {
    let sent: Record<string, string> | undefined;
    const { call } = calling((_op?: unknown, body?: unknown) => {
      sent = body as Record<string, string>;
      return Promise.resolve({ meta: { code: 0 }, data: { ok: true } });
    });
    const facts = { requestId: 'r-1' } as RequestFacts;
    const outcome = await call.call({ ...OPEN, facts });
    expect(sent).toEqual({ iban: 'IR00', requestHandlingType: 'standard', trackId: OPEN.trackId });
    expect(outcome.status).toBe('succeeded');
    expect(facts.inquiry).toMatchObject({ trackId: OPEN.trackId, outcome: 'succeeded', clientId: 'svc-a' });
  });

  it('turns an unexpected failure into an `unknown` outcome (500, possibly charged), counted', async () => {
    const { call, metrics } = calling(() => Promise.reject(new Error('boom')));
    const outcome = await call.call(OPEN);
    expect(outcome).toMatchObject({ status: 'unknown', notCharged: false, response: { status: 500 } });
    const counted = (await metrics.inquiries.get()).values.find(
      (value) => value.labels.operation === 'iban' && value.labels.status === 'unknown',
    );
    expect(counted?.value).toBe(1);
  });
});
