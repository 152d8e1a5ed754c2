/**
 * The ledger when a replica dies (docs/api.md §6): gateway replicas in processes of their own,
 * SIGKILLed, beside an in-process replica on the same Redis and PostgreSQL (servers started
 * here). An inquiry settled by a replica that then dies, while PostgreSQL is down, still reaches
 * the ledger once; an inquiry whose replica dies during the upstream call gets its `unknown`,
 * `possibly` charged entry from another replica once its deadline has passed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { SHAHKAR } from './support/fixtures.js';
import { buildGateway, startGatewayProcess, type GatewayProcess } from './support/gateway-process.js';
import { callGateway, startGateway, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

/** Short timeouts: an inquiry's deadline (inquiry-deadline.ts) is then 2 × 1 s + 4 × 1 s + 2 s. */
const ENV = { UPSTREAM_TIMEOUT_MS: '1000', UPSTREAM_ADVANCED_TIMEOUT_MS: '1000', REDIS_KEY_PREFIX: 'death' };

let redis: RedisServer;
let postgres: PostgresServer;
let sim: UpstreamSimulator;
let build: string;
let survivor: RunningGateway;
let db: PgLedgerDatabase;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  build = buildGateway();
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  sim = new UpstreamSimulator();
  await sim.start(0);
  survivor = await startGateway({
    ...ENV,
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    LEDGER_DATABASE_URL: postgres.url,
  });
  await untilStoreReady(survivor, 15_000);
  db = new PgLedgerDatabase(postgres.url);
}, 120_000);

afterAll(async () => {
  for (const p of processes) p.process.kill('SIGKILL');
  await survivor?.close();
  await db?.close();
  await sim?.stop();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

async function doomed(): Promise<GatewayProcess> {
  const started = await startGatewayProcess(build, {
    ...ENV,
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    LEDGER_DATABASE_URL: postgres.url,
  });
  processes.push(started);
  return started;
}

async function killed(replica: GatewayProcess): Promise<void> {
  replica.process.kill('SIGKILL');
  await replica.exited;
}

async function entries(where: string, params: unknown[]): Promise<Array<Record<string, unknown>>> {
  return db
    .query<Record<string, unknown>>(
      `SELECT track_id::text, kind, status, charged FROM ledger_entries WHERE ${where}`,
      params,
    )
    .catch(() => []);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('a replica SIGKILLed', () => {
  it('after settling, while PostgreSQL is down: another replica writes its entry once', async () => {
    const replica = await doomed();
    await postgres.kill();
    const answered = await callGateway(replica.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    });
    expect(answered.status).toBe(200);
    await killed(replica);
    await postgres.restart();
    const trackId = answered.body.trackId as string;
    const rows = await until(
      () => entries('track_id = $1', [trackId]),
      (found) => found.length > 0,
    );
    expect(rows).toEqual([{ track_id: trackId, kind: 'settled', status: 'succeeded', charged: 'yes' }]);
  }, 120_000);

  it('during the upstream call: its inquiry gets an unknown, possibly charged entry once the deadline has passed', async () => {
    const replica = await doomed();
    sim.setLatency(5_000);
    const before = sim.inquiryCalls;
    const pending = callGateway(replica.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    }).catch(() => null);
    await until(
      () => Promise.resolve(sim.inquiryCalls),
      (calls) => calls > before,
      20_000,
    );
    await killed(replica);
    await pending;
    sim.setLatency(0);
    const rows = await until(
      () => entries("kind = 'overdue'", []),
      (found) => found.length > 0,
    );
    expect(rows).toEqual([expect.objectContaining({ kind: 'overdue', status: 'unknown', charged: 'possibly' })]);
    // Read back through the surviving replica, from the ledger once the record is gone.
    const trackId = rows[0].track_id as string;
    const read = await callGateway(survivor.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
    expect(read.body).toMatchObject({ trackId, status: 'unknown' });
  }, 120_000);
});
