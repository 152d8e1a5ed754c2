/**
 * The ledger end to end (docs/api.md §6): two gateway replicas on one Redis, the upstream
 * simulator, and a PostgreSQL server this file starts and keeps down for the whole run of
 * inquiries. Every inquiry reaches the ledger exactly once when PostgreSQL comes back, both
 * replicas draining at once; readiness never depended on it; and the inquiry is read from the
 * ledger once its Redis record is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { SHAHKAR } from './support/fixtures.js';
import { callGateway, startGateways, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { parseExposition } from './support/prometheus.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

let redis: RedisServer;
let postgres: PostgresServer;
let sim: UpstreamSimulator;
let gateways: RunningGateway[] = [];
let db: PgLedgerDatabase;
let redisClient: Redis;
const trackIds: string[] = [];

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
  await postgres.kill(); // down before the gateways start, and for the whole run of inquiries
  gateways = await startGateways(2, {
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: 'ledger-e2e',
    LEDGER_DATABASE_URL: postgres.url,
    // The ledger keeps results only sealed (docs/api.md §6): the read from the ledger below has its data.
    STORE_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
  });
  await Promise.all(gateways.map((g) => untilStoreReady(g, 15_000)));
  db = new PgLedgerDatabase(postgres.url);
  redisClient = new Redis(redis.url);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close().catch(() => undefined)));
  await db?.close();
  redisClient?.disconnect();
  await sim?.stop();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

async function metric(g: RunningGateway, name: string, labels?: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${g.url}/metrics`)).text();
  return parseExposition(text).value(name, labels) ?? NaN;
}

/** Polls `check` every 100 ms until it holds (the drainers poll the queue every 250 ms). */
async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `count` Shahkar inquiries spread over `replicas`, all at once. */
function inquiries(replicas: RunningGateway[], count: number) {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      callGateway(replicas[i % replicas.length].url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
      }),
    ),
  );
}

/** Ledger rows of these trackIds, and how many trackIds they cover. */
async function entriesOf(ids: string[]): Promise<{ n: number; distinct: number }> {
  const [row] = await db.query<{ n: number; distinct: number }>(
    'SELECT count(*)::int AS n, count(DISTINCT track_id)::int AS distinct FROM ledger_entries WHERE track_id = ANY($1::uuid[])',
    [ids],
  );
  return row;
}

describe('the ledger across a PostgreSQL outage', () => {
  it('answers inquiries and stays ready while PostgreSQL is down; the entries wait in Redis', async () => {
    const answers = await inquiries(gateways, 60);
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 60 }, () => 200));
    trackIds.push(...answers.map((a) => a.body.trackId as string));
    expect((await fetch(`${gateways[0].url}/health/ready`)).status).toBe(200);
    await until(async () => (await metric(gateways[0], 'vgw_ledger_queue_depth')) === 60);
    expect(await metric(gateways[1], 'vgw_ledger_write_failures_total')).toBeGreaterThan(0);
  });

  it('writes every entry exactly once when PostgreSQL is back, both replicas draining', async () => {
    await postgres.restart();
    await until(async () => (await entriesOf(trackIds).catch(() => ({ n: 0 }))).n >= 60);
    expect(await entriesOf(trackIds)).toEqual({ n: 60, distinct: 60 });
    await until(async () => (await metric(gateways[1], 'vgw_ledger_queue_depth')) === 0);
    const written = await Promise.all(
      gateways.map((g) =>
        fetch(`${g.url}/metrics`)
          .then((r) => r.text())
          .then((text) => parseExposition(text).value('vgw_ledger_entries_written_total', { kind: 'settled' }) ?? 0),
      ),
    );
    expect(written.reduce((sum, n) => sum + n, 0)).toBe(60);
    const [row] = await db.query<Record<string, unknown>>(
      'SELECT client_id, operation, status, charged, cost_units, request_id FROM ledger_entries WHERE track_id = $1',
      [trackIds[0]],
    );
    expect(row).toMatchObject({ client_id: 'app-full', operation: 'shahkar', status: 'succeeded', charged: 'yes' });
    expect(row.cost_units).toBe(1);
    expect(typeof row.request_id).toBe('string');
  });
});

describe('reads from the ledger', () => {
  it('answers GET /v1/inquiries/{trackId} after the Redis record is gone, same shape, same client rule', async () => {
    const trackId = trackIds[1];
    const before = await callGateway(gateways[0].url, 'GET', `/v1/inquiries/${trackId}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    await redisClient.del(new RedisKeys('ledger-e2e').inquiry(trackId));
    const after = await callGateway(gateways[1].url, 'GET', `/v1/inquiries/${trackId}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(after.status).toBe(200);
    const { upstream: beforeUpstream, ...rest } = before.body as { upstream: { code: number } };
    expect(after.body).toEqual({ ...rest, upstream: { code: beforeUpstream.code } });
    const other = await callGateway(gateways[1].url, 'GET', `/v1/inquiries/${trackId}`, {
      apiKey: TEST_CLIENTS.other.key,
    });
    expect(other.status).toBe(404);
  });

  it('leaves the data out once the result retention has dropped it', async () => {
    const trackId = trackIds[2];
    await redisClient.del(new RedisKeys('ledger-e2e').inquiry(trackId));
    // What the retention's partition DROP does to this one result (ledger-store.integration.spec.ts drops partitions).
    await db.query('DELETE FROM ledger_results WHERE track_id = $1', [trackId]);
    const read = await callGateway(gateways[0].url, 'GET', `/v1/inquiries/${trackId}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ trackId, status: 'succeeded' });
    expect(read.body).not.toHaveProperty('data');
  });
});

describe('inquiry replicas that leave the drain to a drainer (LEDGER_DRAIN=false)', () => {
  it('queue their entries without writing them, show the backlog, and a draining replica writes each once', async () => {
    const env = {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: 'ledger-e2e-apart',
      LEDGER_DATABASE_URL: postgres.url,
    };
    const inquiryReplicas = await startGateways(2, { ...env, LEDGER_DRAIN: 'false' });
    gateways.push(...inquiryReplicas);
    const answers = await inquiries(inquiryReplicas, 40);
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 40 }, () => 200));
    const apart = answers.map((a) => a.body.trackId as string);
    // The backlog's series come from these replicas too: the alert fires when no drainer runs.
    await until(async () => (await metric(inquiryReplicas[0], 'vgw_ledger_queue_depth')) === 40);
    expect(await entriesOf(apart)).toEqual({ n: 0, distinct: 0 });
    expect(await metric(inquiryReplicas[1], 'vgw_ledger_entries_written_total', { kind: 'settled' })).toBe(0);

    const [drainer] = await startGateways(1, env);
    gateways.push(drainer);
    await until(async () => (await entriesOf(apart)).n >= 40);
    expect(await entriesOf(apart)).toEqual({ n: 40, distinct: 40 });
    expect(await metric(drainer, 'vgw_ledger_entries_written_total', { kind: 'settled' })).toBe(40);
    await until(async () => (await metric(drainer, 'vgw_ledger_queue_depth')) === 0);
  });
});
