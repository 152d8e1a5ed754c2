/** Messages between the bench (parent) and a server child process (bench/server-process.ts). */

export type ServerRole = 'simulator' | 'gateway';

export interface SimulatorSpec {
  role: 'simulator';
  latencyMs: number;
}

export interface GatewaySpec {
  role: 'gateway';
  /** Merged over startGateway's defaults (credentials, API_KEYS, LOG_LEVEL silent). */
  env: Record<string, string>;
  /** A valid inquiry body: sent until it answers 200, so the token and the store are ready. */
  probeBody: string;
  probeApiKey: string;
}

export type ServerSpec = SimulatorSpec | GatewaySpec;

export interface SimulatorStats {
  tokenCalls: { credentials: number; refresh: number; failed: number };
  inquiryCalls: number;
  rssMb: number;
}

export interface GatewayStats {
  rssMb: number;
}

/** Parent → child. */
export interface Command {
  id: number;
  type: 'stats' | 'stop';
}

/** Child → parent. */
export type Report =
  | { type: 'ready'; url: string }
  | { type: 'failed'; message: string }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; message: string };
