import autocannon from 'autocannon';

export interface LoadTarget {
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: string;
  /** Called before every request; returns its body (e.g. with a fresh trackId). */
  bodyPerRequest?: () => string;
  /** Called before every request; headers added to `headers` (e.g. a fresh Idempotency-Key). */
  headersPerRequest?: () => Record<string, string>;
}

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** A fixed number of requests instead of `durationSeconds` (the long run). */
  amount?: number;
  /** A fixed arrival rate, requests per second over all connections (default: as fast as answered). */
  rate?: number;
}

/** The figures kept from one run (latencies in ms, every answer counted, errors included). */
export interface LoadFigures {
  requestsPerSecond: number;
  totalRequests: number;
  latencyMs: { average: number; p50: number; p97_5: number; p99: number; max: number };
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  durationSeconds: number;
}

/** Percentile of an ascending array (nearest rank). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

function latencyFigures(samples: number[]): LoadFigures['latencyMs'] {
  const sorted = Float64Array.from(samples).sort();
  const sum = samples.reduce((a, b) => a + b, 0);
  return {
    average: samples.length ? sum / samples.length : NaN,
    p50: percentile(sorted, 50),
    p97_5: percentile(sorted, 97.5),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
  };
}

async function run(
  target: LoadTarget,
  connections: number,
  durationSeconds: number,
  amount?: number,
  rate?: number,
): Promise<{ result: autocannon.Result; latencies: number[] }> {
  const freshBody = target.bodyPerRequest;
  const freshHeaders = target.headersPerRequest;
  const request: autocannon.Request = { method: target.method, headers: target.headers, body: target.body };
  // setupRequest runs before every request: a new body or headers each time.
  if (freshBody || freshHeaders) {
    request.setupRequest = (req) => ({
      ...req,
      ...(freshBody ? { body: freshBody() } : {}),
      ...(freshHeaders ? { headers: { ...target.headers, ...freshHeaders() } } : {}),
    });
  }
  // autocannon's own histogram keeps whole milliseconds and 2xx answers only; the response
  // times it reports per answer (hrtime, fractional ms) are kept here for every answer.
  const latencies: number[] = [];
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        requests: [request],
        connections,
        ...(amount ? { amount } : { duration: durationSeconds }),
        ...(rate ? { overallRate: rate } : {}),
        timeout: 10,
      },
      (error: unknown, done) =>
        error
          ? reject(error instanceof Error ? error : new Error('autocannon failed', { cause: error }))
          : resolve(done),
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
    });
  });
  return { result, latencies };
}

function figures(result: autocannon.Result, latencies: number[]): LoadFigures {
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
  return {
    requestsPerSecond: result.requests.total / result.duration,
    totalRequests: result.requests.total,
    latencyMs: latencyFigures(latencies),
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    durationSeconds: result.duration,
  };
}

/** The warm-up: same target and connections, results discarded. */
export async function warmUp(target: LoadTarget, settings: LoadSettings): Promise<void> {
  if (settings.warmupSeconds > 0)
    await run(target, settings.connections, settings.warmupSeconds, undefined, settings.rate);
}

/** The measured run. */
export async function measure(target: LoadTarget, settings: LoadSettings): Promise<LoadFigures> {
  const { result, latencies } = await run(
    target,
    settings.connections,
    settings.durationSeconds,
    settings.amount,
    settings.rate,
  );
  return figures(result, latencies);
}
