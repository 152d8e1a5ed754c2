import autocannon from 'autocannon';

export interface LoadTarget {
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: string;
  /** Called before every request; returns its body (e.g. with a fresh trackId). */
  bodyPerRequest?: () => string;
}

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

/** The figures kept from one autocannon run (latencies in ms). */
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

function run(target: LoadTarget, connections: number, durationSeconds: number): Promise<autocannon.Result> {
  const fresh = target.bodyPerRequest;
  const request: autocannon.Request = { method: target.method, headers: target.headers, body: target.body };
  // setupRequest runs before every request: a new body each time (e.g. a fresh trackId).
  if (fresh) request.setupRequest = (req) => ({ ...req, body: fresh() });
  return autocannon({
    url: target.url,
    requests: [request],
    connections,
    duration: durationSeconds,
    timeout: 10,
  });
}

function figures(result: autocannon.Result): LoadFigures {
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
  return {
    requestsPerSecond: result.requests.average,
    totalRequests: result.requests.total,
    latencyMs: {
      average: result.latency.average,
      p50: result.latency.p50,
      p97_5: result.latency.p97_5,
      p99: result.latency.p99,
      max: result.latency.max,
    },
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
  if (settings.warmupSeconds > 0) await run(target, settings.connections, settings.warmupSeconds);
}

/** The measured run. */
export async function measure(target: LoadTarget, settings: LoadSettings): Promise<LoadFigures> {
  return figures(await run(target, settings.connections, settings.durationSeconds));
}
