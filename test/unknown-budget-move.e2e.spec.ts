/**
 * End to end, through HTTP: inquiries that end `unknown` (one answered at once, one asked with
 * `Prefer: respond-async`) keep their units spent in the budget, held; a reconciliation of their
 * period whose list omits them resolves them as not charged and gives their units back, once
 * (a second upload moves nothing), at the price each was opened at. In-process and Redis stores.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway, startGateway, TEST_CLIENTS, type RunningGateway } from './support/gateway.js';
import { PostgresServer } from './support/postgres-server.js';
import { freePort, RedisServer } from './support/redis-server.js';
import { untilEntriesWritten } from './support/ledger-entries.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADMIN = { clientId: 'finance', key: 'key-finance-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };

let postgres: PostgresServer;
let redis: RedisServer;
let sim: UpstreamSimulator;
let db: PgLedgerDatabase;

beforeAll(async () => {
  [postgres, redis] = await Promise.all([PostgresServer.start(), RedisServer.start()]);
  sim = new UpstreamSimulator();
  await sim.start(0);
  db = new PgLedgerDatabase(postgres.url);
  await migrate(db);
});
afterAll(async () => {
  await db?.close();
  await sim?.stop();
  await Promise.all([postgres?.stop(), redis?.stop()]);
});

describe.each([
  ['in-process', {}],
  ['redis', { REDIS_URL: 'redis' }],
])('%s store', (_name, storeEnv) => {
  let gateway: RunningGateway;
  let ops: string;
  const client = `svc-${_name}`;
  beforeAll(async () => {
    const opsPort = await freePort();
    ops = `http://127.0.0.1:${opsPort}`;
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      API_KEYS: apiKeysWith(ADMIN),
      OPS_PORT: String(opsPort),
      LEDGER_DATABASE_URL: postgres.url,
      COST_UNIT_PRICE: JSON.stringify({ amount: '25000', currency: 'IRR' }),
      BUDGETS: JSON.stringify([{ clientId: TEST_CLIENTS.full.clientId, daily: 1000 }]),
      ...('REDIS_URL' in storeEnv ? { REDIS_URL: redis.url, REDIS_KEY_PREFIX: client } : {}),
    });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
  });

  const shahkar = (headers: Record<string, string> = {}) =>
    callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR, headers });
  const spent = async () => {
    const budget = await callGateway(gateway.url, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.full.key });
    return (budget.body.budgets as Array<{ spentUnits: number; reservedUnits: number }>)[0];
  };

  it('gives back the units of unknowns a reconciliation resolves as not charged, once', async () => {
    const before = (await spent()).spentUnits;
    const paid = await shahkar();
    expect(paid.status).toBe(200);
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'malformed' });
    const lost = await shahkar();
    expect(lost.status).toBe(502);
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'malformed' });
    const asynchronous = await shahkar({ prefer: 'respond-async' });
    expect([202, 502]).toContain(asynchronous.status);
    const trackIds = [paid, lost, asynchronous].map((r) => String(r.body.trackId));
    await untilEntriesWritten(db, trackIds, { inquiries: trackIds.length });
    expect(await spent()).toMatchObject({ spentUnits: before + 3, reservedUnits: 0 });

    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const send = () =>
      fetch(`${ops}/admin/reconciliations?from=${today}&to=${tomorrow}`, {
        method: 'POST',
        headers: { 'x-api-key': ADMIN.key, 'content-type': 'text/csv' },
        body: `trackId\n${trackIds[0]}\n`,
      });
    const report = (await (await send()).json()) as Record<string, { trackIds: string[] }>;
    expect(report.resolvedNotCharged.trackIds.sort()).toEqual([trackIds[1], trackIds[2]].sort());
    expect(await spent()).toMatchObject({ spentUnits: before + 1, reservedUnits: 0 });
    await send();
    expect(await spent()).toMatchObject({ spentUnits: before + 1, reservedUnits: 0 });
    const prices = await db.query<{ unit_price: string; currency: string }>(
      'SELECT DISTINCT unit_price::text AS unit_price, currency FROM ledger_entries WHERE track_id = ANY($1::uuid[])',
      [trackIds],
    );
    expect(prices).toEqual([{ unit_price: '25000', currency: 'IRR' }]);
  }, 60_000);
});
