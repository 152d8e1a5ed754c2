/**
 * Refusals in the trends (issue 35), black box: two gateway processes sharing one Redis and one
 * PostgreSQL. Many concurrent inquiries over a spent budget (429 budget_exhausted) and over a
 * client quota (429 rate_limited), spread over both replicas, appear in GET /admin/trends as
 * exactly that many `refusedBudget` and `refusedQuota` for that client and operation once both
 * replicas have flushed (LEDGER_REFUSAL_FLUSH_SECONDS=1; the route polled to a deadline).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { apiKeysWith, callGateway } from './support/gateway.js';
import { buildGateway, startGatewayProcess, type GatewayProcess } from './support/gateway-process.js';
import { IBAN, SHAHKAR } from './support/fixtures.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

// Client ids of this file only: the run's PostgreSQL is shared with other files.
const suffix = randomBytes(4).toString('hex');
const SPENT = { clientId: `spent-${suffix}`, key: `key-spent-${suffix}-0123`, scopes: ['kyc:shahkar', 'kyc:iban'] };
const QUOTA = {
  clientId: `quota-${suffix}`,
  key: `key-quota-${suffix}-0123`,
  scopes: ['kyc:shahkar', 'kyc:iban'],
  quotaPerMinute: 2,
};
const OPS = { clientId: `ops-${suffix}`, key: `key-ops-${suffix}-0123`, scopes: ['ledger:read'] };
const BUDGET_REFUSALS = 60;
const QUOTA_CALLS = 12;

let redis: RedisServer;
let postgres: PostgresServer | undefined;
let sim: UpstreamSimulator;
let replicas: GatewayProcess[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  let databaseUrl = process.env.VGW_TEST_LEDGER_DATABASE_URL;
  if (!databaseUrl) {
    postgres = await PostgresServer.start();
    databaseUrl = postgres.url;
  }
  const build = buildGateway();
  const env = {
    REDIS_URL: redis.url,
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(SPENT, QUOTA, OPS),
    BUDGETS: JSON.stringify([{ clientId: SPENT.clientId, daily: 0 }]),
    LEDGER_DATABASE_URL: databaseUrl,
    LEDGER_REFUSAL_FLUSH_SECONDS: '1',
  };
  replicas = await Promise.all([startGatewayProcess(build, env), startGatewayProcess(build, env)]);
}, 120_000);

afterAll(async () => {
  for (const p of replicas) if (p.process.exitCode === null) p.process.kill('SIGKILL');
  await Promise.all(replicas.map((p) => p.exited));
  await sim?.stop();
  await redis?.stop();
  await postgres?.stop();
});

/** Sums of this file's clients' refusals over the trends around now (a midnight may fall between). */
async function refusals(): Promise<Record<string, number>> {
  const now = Date.now();
  const range = `from=${new Date(now - 86_400_000).toISOString()}&to=${new Date(now + 86_400_000).toISOString()}`;
  const res = await callGateway(replicas[0].url, 'GET', `/admin/trends?${range}`, { apiKey: OPS.key });
  expect(res.status).toBe(200);
  const sums: Record<string, number> = {};
  for (const row of res.body.rows as Array<{
    clientId: string;
    operation: string;
    refusedBudget: number;
    refusedQuota: number;
  }>) {
    if (row.clientId !== SPENT.clientId && row.clientId !== QUOTA.clientId) continue;
    for (const reason of ['refusedBudget', 'refusedQuota'] as const) {
      const key = `${row.clientId} ${row.operation} ${reason}`;
      sums[key] = (sums[key] ?? 0) + row[reason];
    }
  }
  return sums;
}

it('counts every refusal of both replicas once, by client, operation and reason', async () => {
  const budget = await Promise.all(
    Array.from({ length: BUDGET_REFUSALS }, (_, i) =>
      callGateway(replicas[i % 2].url, 'POST', '/v1/kyc/shahkar', { apiKey: SPENT.key, json: SHAHKAR }),
    ),
  );
  expect(budget.map((res) => [res.status, res.body.code])).toEqual(
    Array(BUDGET_REFUSALS).fill([429, 'budget_exhausted']),
  );
  const quota = await Promise.all(
    Array.from({ length: QUOTA_CALLS }, (_, i) =>
      callGateway(replicas[i % 2].url, 'POST', '/v1/kyc/iban', { apiKey: QUOTA.key, json: { iban: IBAN } }),
    ),
  );
  const quotaRefused = quota.filter((res) => res.status === 429 && res.body.code === 'rate_limited').length;
  expect(quotaRefused).toBe(QUOTA_CALLS - QUOTA.quotaPerMinute);

  const expected = {
    [`${SPENT.clientId} shahkar refusedBudget`]: BUDGET_REFUSALS,
    [`${SPENT.clientId} shahkar refusedQuota`]: 0,
    [`${QUOTA.clientId} iban refusedBudget`]: 0,
    [`${QUOTA.clientId} iban refusedQuota`]: quotaRefused,
  };
  // Counts only grow: polled until both replicas' flushes are in (bounded), then held to exactly that.
  const deadline = Date.now() + 20_000;
  let seen = await refusals();
  while (
    Date.now() < deadline &&
    ((seen[`${SPENT.clientId} shahkar refusedBudget`] ?? 0) < BUDGET_REFUSALS ||
      (seen[`${QUOTA.clientId} iban refusedQuota`] ?? 0) < quotaRefused)
  ) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    seen = await refusals();
  }
  expect(seen).toEqual(expected);
}, 60_000);
