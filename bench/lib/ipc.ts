/** Messages between the bench (parent) and a server child process (bench/server-process.ts). */

export type ServerRole = 'simulator' | 'gateway' | 'reference' | 'sink';

export interface SimulatorSpec {
  role: 'simulator';
  latencyMs: number;
}

export interface GatewaySpec {
  role: 'gateway';
  /**
   * Merged over the bench's defaults (sandbox credentials, the test API keys). The gateway runs
   * with its production logger (JSON lines at LOG_LEVEL, to stdout, which the bench discards).
   */
  env: Record<string, string>;
  /** A valid inquiry body: sent until it answers 200, so the token and the store are ready. */
  probeBody: string;
  probeApiKey: string;
}

/** The bare reference proxy (bench/reference-proxy.ts). */
export interface ReferenceSpec {
  role: 'reference';
  upstreamUrl: string;
  redisUrl: string;
  probeBody: string;
}

/** An HTTP server that answers 200 to everything (an OTLP collector stand-in). */
export interface SinkSpec {
  role: 'sink';
}

export type ServerSpec = SimulatorSpec | GatewaySpec | ReferenceSpec | SinkSpec;

/** What every server child reports about itself (process.cpuUsage and memoryUsage). */
export interface ProcessStats {
  /** User + system CPU time of the whole process since it started, µs. */
  cpuUserUs: number;
  cpuSystemUs: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  arrayBuffersBytes: number;
  /** process.hrtime in µs (CLOCK_MONOTONIC, the clock of --cpu-prof timestamps). */
  monotonicUs: number;
  /**
   * The main thread's share of the CPU time above (process.threadCpuUsage), µs; the rest is other
   * threads: the embedded ledger's worker, GC helpers, libuv's pool. Absent from older builds.
   */
  cpuMainThreadUs?: number;
  /** Bytes young collections promoted to the old generation since start-up; absent from older builds. */
  promotedBytes?: number;
  /** Full (mark-compact) collections since start-up; absent from older builds. */
  fullCollections?: number;
}

export interface SimulatorStats extends ProcessStats {
  tokenCalls: { credentials: number; refresh: number; failed: number };
  inquiryCalls: number;
  /** Inquiries answered with a supplier failure (see `failRatio`). */
  failedInquiries: number;
}

export type GatewayStats = ProcessStats;

/** Parent → child. `configure` applies to the simulator only. */
export type Command =
  { id: number; type: 'stats' | 'stop' | 'gc' } | { id: number; type: 'configure'; failRatio: number };

/** Child → parent. */
export type Report =
  | { type: 'ready'; url: string }
  | { type: 'failed'; message: string }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; message: string };
