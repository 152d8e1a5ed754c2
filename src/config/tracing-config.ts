type Env = Record<string, string | undefined>;

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/** Tracing as the standard OTEL_* variables configure it (docs/operations.md, "Tracing"). */
export interface TracingConfig {
  enabled: boolean;
  serviceName: string;
  sampler: SamplerName;
  /** The ratio of the *traceidratio samplers, 0..1. */
  samplerRatio: number;
  /** Where spans are sent (OTLP over HTTP, protobuf). */
  tracesUrl: string;
  /** OTLP exporter headers (often an auth token): treated as secrets, never logged. */
  exporterHeaders: Record<string, string>;
  resourceAttributes: Record<string, string>;
  /** BatchSpanProcessor's export delay (OTEL_BSP_SCHEDULE_DELAY). */
  batchDelayMs: number;
}

/**
 * The tracing slice of the configuration, read from the standard OpenTelemetry variables so
 * that an operator's usual settings work unchanged. Tracing is OFF unless an OTLP endpoint is
 * set (or OTEL_TRACES_EXPORTER=otlp); OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn
 * it off whatever else is set. Problems are reported by variable name, never by value.
 */
export function tracingConfigFrom(env: Env, problems: string[]): TracingConfig {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    problems.push('OTEL_TRACES_EXPORTER: must be otlp or none (the gateway ships the OTLP exporter only)');
  }
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== 'http/protobuf') {
    problems.push(
      `${env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL'}: must be http/protobuf`,
    );
  }

  let tracesUrl = 'http://localhost:4318/v1/traces';
  const signalEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const baseEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (signalEndpoint !== undefined) {
    if (isHttpUrl(signalEndpoint)) tracesUrl = signalEndpoint;
    else problems.push('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http(s) URL');
  } else if (baseEndpoint !== undefined) {
    // The spec: the base endpoint gets the signal's path appended.
    if (isHttpUrl(baseEndpoint)) tracesUrl = `${baseEndpoint.replace(/\/+$/, '')}/v1/traces`;
    else problems.push('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL');
  }

  const sampler = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER: must be one of ${SAMPLERS.join(', ')}`);
  const samplerRatio = env.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (!(samplerRatio >= 0 && samplerRatio <= 1)) problems.push('OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1');

  const batchDelayMs = env.OTEL_BSP_SCHEDULE_DELAY === undefined ? 5000 : Number(env.OTEL_BSP_SCHEDULE_DELAY);
  if (!(Number.isInteger(batchDelayMs) && batchDelayMs >= 0)) {
    problems.push('OTEL_BSP_SCHEDULE_DELAY: must be a whole number of milliseconds');
  }

  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || exporter === 'none';
  return {
    enabled: !disabled && (exporter === 'otlp' || signalEndpoint !== undefined || baseEndpoint !== undefined),
    serviceName: env.OTEL_SERVICE_NAME ?? 'verification-gateway',
    sampler,
    samplerRatio,
    tracesUrl,
    exporterHeaders: keyValueList(
      env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS,
      env.OTEL_EXPORTER_OTLP_TRACES_HEADERS !== undefined
        ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'
        : 'OTEL_EXPORTER_OTLP_HEADERS',
      problems,
    ),
    resourceAttributes: keyValueList(env.OTEL_RESOURCE_ATTRIBUTES, 'OTEL_RESOURCE_ATTRIBUTES', problems),
    batchDelayMs,
  };
}

function isHttpUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** The W3C Baggage-style `key=value,key2=value2` lists of OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES. */
function keyValueList(raw: string | undefined, variable: string, problems: string[]): Record<string, string> {
  const pairs: Record<string, string> = {};
  if (raw === undefined) return pairs;
  for (const entry of raw.split(',')) {
    if (entry.trim() === '') continue;
    const at = entry.indexOf('=');
    let key: string;
    let value = '';
    try {
      key = decodeURIComponent(entry.slice(0, Math.max(at, 0)).trim());
      value = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      key = '';
    }
    if (at <= 0 || key === '') {
      problems.push(`${variable}: must be a comma-separated list of key=value pairs`);
      return {};
    }
    pairs[key] = value;
  }
  return pairs;
}
