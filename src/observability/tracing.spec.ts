import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { tracingConfigFrom } from '../config/tracing-config.js';
import { callerTraceContext, w3cTraceparent } from './tracing.js';

function config(env: Record<string, string | undefined>) {
  const problems: string[] = [];
  return { config: tracingConfigFrom(env, problems), problems };
}

describe('tracingConfigFrom (the standard OTEL_* variables)', () => {
  it('is off by default, and on once an OTLP endpoint or the otlp exporter is named', () => {
    expect(config({}).config.enabled).toBe(false);
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).config).toMatchObject({
      enabled: true,
      tracesUrl: 'http://collector:4318/v1/traces',
      serviceName: 'verification-gateway',
      sampler: 'parentbased_always_on',
    });
    expect(config({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/x' }).config.tracesUrl).toBe('https://c/x');
    expect(config({ OTEL_TRACES_EXPORTER: 'otlp' }).config).toMatchObject({
      enabled: true,
      tracesUrl: 'http://localhost:4318/v1/traces',
    });
  });

  it.each([{ OTEL_SDK_DISABLED: 'true' }, { OTEL_TRACES_EXPORTER: 'none' }])('stays off when told so: %j', (off) => {
    const { config: c, problems } = config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', ...off });
    expect(c.enabled).toBe(false);
    expect(problems).toEqual([]);
  });

  it('reads the sampler, service name, resource attributes, headers and batch delay', () => {
    const { config: c, problems } = config({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_SERVICE_NAME: 'vgw',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,k8s.namespace.name=kyc',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect(problems).toEqual([]);
    expect(c).toMatchObject({
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      serviceName: 'vgw',
      resourceAttributes: { 'deployment.environment': 'prod', 'k8s.namespace.name': 'kyc' },
      exporterHeaders: { authorization: 'Bearer abc' },
      batchDelayMs: 100,
    });
  });

  it.each([
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER'],
    [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG'],
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, 'OTEL_TRACES_EXPORTER'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-without-key' }, 'OTEL_EXPORTER_OTLP_HEADERS'],
    [{ OTEL_BSP_SCHEDULE_DELAY: 'soon' }, 'OTEL_BSP_SCHEDULE_DELAY'],
  ])('names the variable of a bad value, never the value: %j', (env, variable) => {
    const { problems } = config(env);
    expect(problems).toHaveLength(1);
    expect(problems[0].startsWith(`${variable}:`)).toBe(true);
    for (const value of Object.values(env)) expect(problems[0]).not.toContain(value);
  });
});

describe('callerTraceContext (passed on while tracing is off)', () => {
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('keeps a valid traceparent and a bounded tracestate', () => {
    expect(callerTraceContext({ traceparent: valid, tracestate: 'a=1' })).toEqual({
      traceparent: valid,
      tracestate: 'a=1',
    });
    expect(callerTraceContext({ traceparent: valid, tracestate: 'x'.repeat(600) })).toEqual({ traceparent: valid });
  });

  it.each([
    undefined,
    '',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    `${valid}\r\nx-injected: 1`,
  ])('drops a malformed traceparent: %j', (traceparent) => {
    expect(callerTraceContext({ traceparent })).toBeUndefined();
  });
});

describe('w3cTraceparent: W3C Trace Context §3.2 to the letter', () => {
  const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`));
  const field = (length: number) =>
    fc.oneof(
      hex(length),
      hex(length).map((h) => h.toUpperCase()),
      fc.string(),
    );
  /**
   * What the spec says of one value: the version-00 header to pass on, or undefined. Read at the
   * grammar's fixed positions, not from the generated parts: a part holding a '-' moves the
   * fields ('01-…-…-00-' is flags 00 and the rest '-', seed -402873612).
   */
  function expected(value: string) {
    if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-' || value.length < 55) return undefined;
    const [version, traceId, parentId, flags, rest] = [
      value.slice(0, 2),
      value.slice(3, 35),
      value.slice(36, 52),
      value.slice(53, 55),
      value.slice(55),
    ];
    const lowerHex = (value: string, length: number) => new RegExp(`^[0-9a-f]{${length}}$`).test(value);
    if (!lowerHex(version, 2) || version === 'ff') return undefined;
    if (!lowerHex(traceId, 32) || /^0+$/.test(traceId)) return undefined;
    if (!lowerHex(parentId, 16) || /^0+$/.test(parentId)) return undefined;
    if (!lowerHex(flags, 2)) return undefined;
    if (version === '00' && rest !== '') return undefined;
    if (rest !== '' && (!rest.startsWith('-') || /[\r\n]/.test(rest))) return undefined;
    const passedFlags = version === '00' ? flags : (parseInt(flags, 16) & 1).toString(16).padStart(2, '0');
    return `00-${traceId}-${parentId}-${passedFlags}`;
  }

  it('accepts exactly what the grammar allows, for every version, and passes on version 00', () => {
    fc.assert(
      fc.property(
        fc.oneof(hex(2), fc.constant('00'), fc.constant('ff'), fc.constant('cc'), field(2)),
        fc.oneof(hex(32), fc.constant('0'.repeat(32)), field(32)),
        fc.oneof(hex(16), fc.constant('0'.repeat(16)), field(16)),
        fc.oneof(hex(2), field(2)),
        fc.oneof(
          fc.constant(''),
          fc.string().map((tail) => `-${tail}`),
          fc.string(),
        ),
        (version, traceId, parentId, flags, rest) => {
          const value = `${version}-${traceId}-${parentId}-${flags}${rest}`;
          // HTTP strips a header value's surrounding white space before the gateway sees it.
          fc.pre(value === value.trim());
          expect(w3cTraceparent(value)).toBe(expected(value));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', undefined],
    ['version 00 with more fields', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x', undefined],
    [
      'a later version with more fields: the first four, sampled flag only',
      'cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0b-what-comes-next',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    ],
    [
      'a later version, not sampled',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00',
    ],
  ])('%s', (_name, value, passedOn) => {
    expect(w3cTraceparent(value)).toBe(passedOn);
    expect(callerTraceContext({ traceparent: value })?.traceparent).toBe(passedOn);
  });
});
