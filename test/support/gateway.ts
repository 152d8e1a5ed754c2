import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway, type GatewayOptions } from '../../src/bootstrap.js';
import { RedisConnection } from '../../src/store/redis-connection.js';
import { TokenProvider } from '../../src/token/token.provider.js';
import type { UpstreamSimulator, UpstreamSimulatorEvents } from '../upstream-simulator/upstream-simulator.js';
import { startupSettled } from '../../src/health/startup-settled.js';
import { START_BOUND_MS, nextEvent, withinStartBound } from './events.js';

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Test callers: the raw keys are what a client sends in `X-Api-Key`. */
export const TEST_CLIENTS = {
  full: {
    clientId: 'app-full',
    key: 'key-full-0123456789',
    scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced'],
  },
  basic: { clientId: 'app-basic', key: 'key-basic-0123456789', scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read'] },
  other: {
    clientId: 'app-other',
    key: 'key-other-0123456789',
    scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced'],
  },
  none: { clientId: 'app-none', key: 'key-none-0123456789', scopes: [] as string[] },
} as const;

/** A test caller given by its raw key (hashed for API_KEYS), with an optional quota. */
export interface TestClient {
  clientId: string;
  key: string;
  scopes: readonly string[];
  quotaPerMinute?: number;
}

/** API_KEYS for the TEST_CLIENTS plus `extra` callers (e.g. one with a small quota). */
export function apiKeysWith(...extra: TestClient[]): string {
  return JSON.stringify(
    [...Object.values(TEST_CLIENTS), ...extra].map(({ clientId, key, scopes, ...rest }) => ({
      clientId,
      keySha256: sha256(key),
      scopes,
      ...('quotaPerMinute' in rest ? { quotaPerMinute: rest.quotaPerMinute } : {}),
    })),
  );
}

export const TEST_API_KEYS = apiKeysWith();

export interface RunningGateway {
  app: NestFastifyApplication;
  url: string;
  tokens: TokenProvider;
  close(): Promise<void>;
}

/** Starts one gateway instance on a free loopback port (silent unless `options.logger` is given). */
export async function startGateway(
  env: Record<string, string | undefined>,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const { app } = await createGateway(
    {
      UPSTREAM_USERNAME: 'sandbox-user',
      UPSTREAM_PASSWORD: 'sandbox-password',
      API_KEYS: TEST_API_KEYS,
      LOG_LEVEL: 'silent',
      // The run's PostgreSQL (ledger-postgres.js), not one embedded PGlite per gateway; without
      // it, PGlite in memory: never a directory in the repository.
      LEDGER_DATABASE_URL: process.env.VGW_TEST_LEDGER_DATABASE_URL,
      LEDGER_DATA_DIR: 'memory://',
      ...env,
    },
    { logger: false, ...options },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}`, tokens: app.get(TokenProvider), close: () => app.close() };
}

/** Several instances sharing one Redis (and one upstream), as replicas would. */
export async function startGateways(count: number, env: Record<string, string | undefined>): Promise<RunningGateway[]> {
  return Promise.all(Array.from({ length: count }, () => startGateway(env)));
}

// ---------------------------------------------------------------------------------------
// Helpers for the end-to-end inquiry specs (test/inquiry-*.e2e.spec.ts).

/** One HTTP exchange with a gateway, as a client sees it. */
export interface Exchange {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body; `{}` when the body is not a JSON object. */
  body: Record<string, unknown>;
}

export interface CallOptions {
  /** Sent as `X-Api-Key`. */
  apiKey?: string;
  /** Serialised as JSON (with `Content-Type: application/json`). */
  json?: unknown;
  /** Sent verbatim, with `contentType` (default application/json). */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One request with Node's fetch; the body is read completely and parsed when it is JSON. */
export async function callGateway(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Exchange> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
  let body: string | undefined;
  if (options.json !== undefined) body = JSON.stringify(options.json);
  if (options.raw !== undefined) body = options.raw;
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) parsed = value as Record<string, unknown>;
  } catch {
    // not JSON: left empty
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** Resolves with the simulator's next `name` event that satisfies `matches`; rejects after `timeoutMs`. */
export function nextSimEvent<K extends keyof UpstreamSimulatorEvents>(
  sim: UpstreamSimulator,
  name: K,
  matches: (event: UpstreamSimulatorEvents[K][0]) => boolean = () => true,
  timeoutMs = 5000,
): Promise<UpstreamSimulatorEvents[K][0]> {
  return nextEvent(sim as unknown as EventEmitter, name, matches, timeoutMs);
}

/**
 * Resolves once the gateway's Redis command connection is ready (at once without Redis).
 * `app.listen` does not wait for it: until then inquiries are refused with 503 store_unavailable.
 */
export function untilStoreReady(gateway: RunningGateway, timeoutMs = START_BOUND_MS): Promise<void> {
  const { client } = gateway.app.get(RedisConnection);
  if (!client || client.status === 'ready') return Promise.resolve();
  // Not events.once: it rejects on the 'error' events of failed reconnection attempts.
  return new Promise((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`Redis not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('ready', onReady);
  });
}

/**
 * Resolves once the gateway's startup probe passes, i.e. its first token attempt has finished and
 * its embedded ledger is open (docs/api.md §4): what a kubelet waits for before routing traffic.
 * Awaits those events (startupSettled), then asks the probe once through Fastify's inject, so an
 * app that is initialised but not listening can be asked too. The bound (START_BOUND_MS) only
 * turns a start that never finishes into a clear failure.
 */
export async function untilStarted(app: NestFastifyApplication): Promise<void> {
  await withinStartBound(startupSettled(app), 'the first token attempt and the ledger opening');
  const probe = await app.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/health/startup' });
  if (probe.statusCode !== 200)
    throw new Error(`startup settled, yet the startup probe answers ${probe.statusCode}: ${probe.body}`);
}
