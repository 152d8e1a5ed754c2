/**
 * Outcomes learned from the provider (docs/api.md §8), end to end: three gateway processes on one
 * Redis and one PostgreSQL (started here), the simulator's tracking service configured in its two
 * shapes through UPSTREAM_TRACKING alone. An inquiry is made `unknown` by the simulator's
 * timeout after processing (charged, or not when its supplier fails), and the replicas ask about
 * it once it is afterSeconds (1) old.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { SHAHKAR } from './support/fixtures.js';
import { GatewayProcesses, type GatewayProcess } from './support/gateway-process.js';
import { callGateway, TEST_CLIENTS } from './support/gateway.js';
import { PostgresServer } from './support/postgres-server.js';
import { rawTcpServer } from './support/raw-tcp-server.js';
import { RedisServer } from './support/redis-server.js';
import { TRACKING_SHAPES } from './upstream-simulator/tracking-service.js';
import { CHECK_SHAHKAR_PATH, DEFAULT_SUPPLIERS, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const KEY = TEST_CLIENTS.full.key;
let redis: RedisServer;
let postgres: PostgresServer;
let sim: UpstreamSimulator;
let db: PgLedgerDatabase;
const processes = new GatewayProcesses();

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  sim = new UpstreamSimulator();
  await sim.start(0);
  db = new PgLedgerDatabase(postgres.url);
}, 120_000);

afterAll(async () => {
  await processes.killAll();
  await db?.close();
  await sim?.stop();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

/** Three replicas asking the tracking service as `tracking` configures it. */
async function replicas(tracking: object, prefix: string): Promise<GatewayProcess[]> {
  const env = {
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    LEDGER_DATABASE_URL: postgres.url,
    UPSTREAM_TIMEOUT_MS: '1000',
    UPSTREAM_ADVANCED_TIMEOUT_MS: '1000',
    UPSTREAM_TRACKING: JSON.stringify(tracking),
  };
  return Promise.all([processes.start(env), processes.start(env), processes.start(env)]);
}

/** An inquiry the upstream processed (charged, unless `supplierFails`) and never answered: 504, `unknown`. */
async function unknownInquiry(replica: GatewayProcess, supplierFails = false): Promise<string> {
  sim.setSupplierFailure(DEFAULT_SUPPLIERS[0].name, supplierFails ? 'error' : null);
  sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang-after-processing' });
  const answer = await callGateway(replica.url, 'POST', '/v1/kyc/shahkar', { apiKey: KEY, json: SHAHKAR });
  sim.setSupplierFailure(DEFAULT_SUPPLIERS[0].name, null);
  expect(answer.status).toBe(504);
  return answer.body.trackId as string;
}

/** Polls (the ledger has no event to await) until `done`; the spec's timeout bounds it. */
async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const read = async (replica: GatewayProcess, trackId: string) =>
  (await callGateway(replica.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: KEY })).body;
const resolved = (replica: GatewayProcess, trackId: string) =>
  until(
    () => read(replica, trackId),
    (body) => body.status !== 'unknown',
  );
const questionsAbout = (trackId: string) => sim.tracking.questions.filter((q) => q.trackId === trackId).length;
const resolutions = (trackId: string) =>
  db.query<{ status: string; charged: string; revision: number; resolved_by: string }>(
    `SELECT status, charged, revision, resolved_by FROM ledger_entries WHERE track_id = $1 AND kind = 'reconciled'`,
    [trackId],
  );

describe('POST with the trackId in the body, string statuses', () => {
  let gateways: GatewayProcess[];
  beforeAll(async () => {
    gateways = await replicas({ ...TRACKING_SHAPES.statusInBody, afterSeconds: 1, perMinute: 60 }, 'track-a');
  }, 120_000);

  it('resolves a charged and an uncharged unknown once each, shown by every replica', async () => {
    const charged = await unknownInquiry(gateways[0]);
    const notCharged = await unknownInquiry(gateways[1], true);
    expect(await resolved(gateways[2], charged)).toMatchObject({ status: 'succeeded', resolvedBy: 'tracking' });
    expect(await resolved(gateways[0], notCharged)).toMatchObject({ status: 'failed', resolvedBy: 'tracking' });
    expect(await resolutions(charged)).toEqual([
      { status: 'succeeded', charged: 'yes', revision: 1, resolved_by: 'tracking' },
    ]);
    expect(await resolutions(notCharged)).toEqual([
      { status: 'failed', charged: 'no', revision: 1, resolved_by: 'tracking' },
    ]);
    // One replica asked about each, once: the lease, then the inquiry is no longer unknown.
    expect([questionsAbout(charged), questionsAbout(notCharged)]).toEqual([1, 1]);
  }, 60_000);

  it('learns nothing from a 500 or an unknown value, and asks again later', async () => {
    sim.tracking.injectFault('http500');
    sim.tracking.injectFault('unknown-value');
    const trackId = await unknownInquiry(gateways[0]);
    expect(await resolved(gateways[1], trackId)).toMatchObject({ status: 'succeeded', resolvedBy: 'tracking' });
    // The 500, the unknown value, then the answer: three questions, one resolution.
    expect(questionsAbout(trackId)).toBe(3);
    expect(await resolutions(trackId)).toHaveLength(1);
    const [row] = await db.query<{ questions: number; last_answer: string }>(
      'SELECT questions, last_answer FROM ledger_tracking WHERE track_id = $1',
      [trackId],
    );
    expect(row).toEqual({ questions: 3, last_answer: 'yes' });
  }, 60_000);
});

describe('GET with the trackId in the path, a boolean', () => {
  const PER_MINUTE = 3;
  let gateways: GatewayProcess[];
  let before: number;
  beforeAll(async () => {
    await processes.killAll();
    before = sim.tracking.questions.length;
    gateways = await replicas({ ...TRACKING_SHAPES.booleanInPath, afterSeconds: 1, perMinute: PER_MINUTE }, 'track-b');
  }, 120_000);

  it('resolves an unknown end to end', async () => {
    const trackId = await unknownInquiry(gateways[2]);
    expect(await resolved(gateways[0], trackId)).toMatchObject({ status: 'succeeded', resolvedBy: 'tracking' });
    expect(await resolutions(trackId)).toEqual([
      { status: 'succeeded', charged: 'yes', revision: 1, resolved_by: 'tracking' },
    ]);
  }, 60_000);

  it('sends at most perMinute questions a minute across the three replicas', async () => {
    for (const replica of gateways) await unknownInquiry(replica);
    await unknownInquiry(gateways[0]);
    const asked = () => sim.tracking.questions.length - before;
    await until(asked, (n) => n >= PER_MINUTE);
    // Three rounds of every replica (a round a second) with unknowns due: none asks more.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(asked()).toBe(PER_MINUTE);
  }, 60_000);
});

describe('with BUDGETS: what a learned answer gives back, on Redis', () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    await processes.killAll();
    const budgets = [{ clientId: TEST_CLIENTS.full.clientId, daily: 100 }];
    [gateway] = await Promise.all([
      processes.start({
        UPSTREAM_BASE_URL: sim.baseUrl,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: 'track-c',
        LEDGER_DATABASE_URL: postgres.url,
        UPSTREAM_TIMEOUT_MS: '1000',
        UPSTREAM_ADVANCED_TIMEOUT_MS: '1000',
        BUDGETS: JSON.stringify(budgets),
        UPSTREAM_TRACKING: JSON.stringify({ ...TRACKING_SHAPES.statusInBody, afterSeconds: 1, perMinute: 60 }),
      }),
    ]);
  }, 120_000);

  const spent = async (): Promise<number> => {
    const res = await callGateway(gateway.url, 'GET', '/v1/budget', { apiKey: KEY });
    expect(res.status).toBe(200);
    return (res.body.budgets as Array<{ spentUnits: number }>)[0].spentUnits;
  };
  const reserved = async (trackId: string): Promise<number> => {
    const [row] = await db.query<{ reserved_units: number }>(
      `SELECT reserved_units FROM ledger_entries WHERE track_id = $1 AND kind = 'reconciled'`,
      [trackId],
    );
    return row.reserved_units;
  };
  const moved = (trackId: string) =>
    until(
      () => db.query('SELECT 1 FROM ledger_budget_moves WHERE track_id = $1', [trackId]),
      (rows) => rows.length > 0,
    );

  it('an unknown learned not charged gives back exactly its reserved units, once; one learned charged, nothing', async () => {
    const start = await spent();
    const charged = await unknownInquiry(gateway);
    const notCharged = await unknownInquiry(gateway, true);
    const held = await spent();
    expect(await resolved(gateway, charged)).toMatchObject({ status: 'succeeded', resolvedBy: 'tracking' });
    expect(await resolved(gateway, notCharged)).toMatchObject({ status: 'failed', resolvedBy: 'tracking' });
    await Promise.all([moved(charged), moved(notCharged)]);
    const units = [await reserved(charged), await reserved(notCharged)];
    expect(units[0]).toBeGreaterThan(0);
    expect(held).toBe(start + units[0] + units[1]);
    expect(await spent()).toBe(start + units[0]);
    // Each round sends the moves left unsent again: two more rounds (a second each) give nothing more.
    const rounds = sim.tracking.questions.length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(sim.tracking.questions.length).toBe(rounds);
    expect(await spent()).toBe(start + units[0]);
  }, 60_000);
});

describe('GET /v1/inquiries on an unknown record, the ledger stalled', () => {
  let gateway: GatewayProcess;
  let stalled = false;
  const clients = new Set<net.Socket>();
  let proxy: Awaited<ReturnType<typeof rawTcpServer>>;
  beforeAll(async () => {
    await processes.killAll();
    // The ledger behind a proxy that can stop passing bytes: PostgreSQL that answers nothing.
    const port = Number(new URL(postgres.url).port);
    proxy = await rawTcpServer((client) => {
      const server = net.connect(port, '127.0.0.1');
      server.on('error', () => client.destroy());
      client.on('close', () => server.destroy());
      clients.add(client);
      client.on('close', () => clients.delete(client));
      if (stalled) client.pause();
      client.pipe(server).pipe(client);
    });
    const ledger = postgres.url.replace(`:${port}/`, `:${new URL(proxy.url).port}/`);
    gateway = await processes.start({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: 'track-d',
      LEDGER_DATABASE_URL: ledger,
      UPSTREAM_TIMEOUT_MS: '1000',
      UPSTREAM_ADVANCED_TIMEOUT_MS: '1000',
    });
  }, 120_000);
  afterAll(() => proxy?.close());

  it('answers from the record within a bound, neither hanging nor failing', async () => {
    const trackId = await unknownInquiry(gateway);
    expect((await read(gateway, trackId)).status).toBe('unknown');
    stalled = true;
    for (const client of clients) client.pause();
    const started = Date.now();
    const answer = await callGateway(gateway.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: KEY });
    expect({ status: answer.status, inquiry: answer.body.status }).toEqual({ status: 200, inquiry: 'unknown' });
    expect(Date.now() - started).toBeLessThan(3_000);
    stalled = false;
    for (const client of clients) client.resume();
  }, 60_000);
});
