import { describe, expect, it } from '@jest/globals';
import type { Span } from '@opentelemetry/api';
import { requestIdFrom, requestLogFields, type RequestFacts } from './request-context.js';
import type { GatewayTracing } from './tracing.js';

describe('requestIdFrom', () => {
  it("keeps a caller's well-formed id and replaces anything else with a fresh UUID", () => {
    expect(requestIdFrom('app-7f3a:42')).toBe('app-7f3a:42');
    for (const bad of [undefined, '', 'has space', 'a'.repeat(129), ['a', 'b'], 'x\ny'])
      expect(requestIdFrom(bad)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('requestLogFields (what ties a log line to its request)', () => {
  it('is empty outside a request', () => {
    expect(requestLogFields(undefined)).toEqual({});
  });

  it('gives the request id, and the trace id while the request is traced', () => {
    const facts: RequestFacts = { requestId: 'r-1' };
    expect(requestLogFields(facts)).toEqual({ requestId: 'r-1' });

    const span = { spanContext: () => ({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736' }) } as unknown as Span;
    facts.trace = { span, tracing: {} as GatewayTracing };
    expect(requestLogFields(facts)).toEqual({ requestId: 'r-1', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
  });
});
