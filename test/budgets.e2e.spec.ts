/**
 * Spend budgets (docs/api.md §6, "Budgets"), black box: three gateway replicas in processes of
 * their own (so one can be SIGKILLed with reservations in flight), one real Redis, and the
 * upstream simulator counting charges per trackId.
 *
 * Proven here: 200 concurrent inquiries over three replicas against a budget of 50 units admit
 * and charge exactly 50 and refuse 150 with 429 `budget_exhausted` (no trackId, nothing sent);
 * a mix of succeeding and failing answers ends with spent = the succeeded units; a finished
 * Idempotency-Key is replayed while the budget is exhausted; `GET /v1/budget` and
 * `GET /admin/budgets` (ledger:read only); the gauges from start-up; a replica killed with
 * reservations in flight leaves them concluded as spent after the inquiry deadline, not leaked.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { apiKeysWith, callGateway, TEST_CLIENTS, type Exchange } from './support/gateway.js';
import { GatewayProcesses, type GatewayProcess } from './support/gateway-process.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const OPS = { clientId: 'ops', key: 'key-ops-0123456789', scopes: ['ledger:read'] };
const BUDGETS = [
  { clientId: TEST_CLIENTS.basic.clientId, daily: 50 },
  { clientId: TEST_CLIENTS.other.clientId, monthly: 20 },
  { clientId: TEST_CLIENTS.full.clientId, daily: 100 },
  { clientId: '*', daily: 100_000 },
];
/**
 * The replica that is killed has short deadlines, so its reservations are concluded within
 * seconds (deadline 5 s + 2 s margin); the others keep room for a loaded machine.
 */
const SHORT_TIMEOUTS = { UPSTREAM_TIMEOUT_MS: '500', UPSTREAM_ADVANCED_TIMEOUT_MS: '500' };
/** A mobile number the simulator rejects (422 upstream_rejected: `failed`, not charged). */
const REJECTED_MOBILE = '09129999999';

let redis: RedisServer;
let sim: UpstreamSimulator;
let replicas: GatewayProcess[] = [];
const processes = new GatewayProcesses();

function replica(env: Record<string, string> = {}): Promise<GatewayProcess> {
  return processes.start({
    REDIS_URL: redis.url,
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(OPS),
    BUDGETS: JSON.stringify(BUDGETS),
    ...env,
  });
}

function inquire(url: string, apiKey: string, json: unknown = SHAHKAR, headers: Record<string, string> = {}) {
  return callGateway(url, 'POST', '/v1/kyc/shahkar', { apiKey, json, headers });
}

async function budget(url: string, apiKey: string): Promise<Record<string, unknown>> {
  const res = await callGateway(url, 'GET', '/v1/budget', { apiKey });
  expect(res.status).toBe(200);
  return res.body;
}

function expectRefused(res: Exchange): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ code: 'budget_exhausted', status: 429 });
  expect(res.body.trackId).toBeUndefined();
  expect(res.headers.get('x-track-id')).toBeNull();
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

const totalCharges = () => [...sim.chargesByTrackId.values()].reduce((sum, n) => sum + n, 0);

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  sim.setFieldValidator((_path, body) =>
    body.mobileNumber === REJECTED_MOBILE ? [{ field: 'mobileNumber', message: 'Not a subscriber' }] : [],
  );
  replicas = await Promise.all([replica(), replica(), replica()]);
}, 120_000);

afterAll(async () => {
  await processes.killAll();
  await sim?.stop();
  await redis?.stop();
});

describe('budgets across three replicas', () => {
  it('has every budget series from start-up, at 0 spent', async () => {
    const text = await (await fetch(`${replicas[0].url}/metrics`)).text();
    expect(text).toContain('vgw_budget_limit_units{client="app-basic",window="daily"} 50');
    expect(text).toContain('vgw_budget_spent_units{client="app-basic",window="daily"} 0');
    expect(text).toContain('vgw_budget_reserved_units{client="*",window="daily"} 0');
    expect(text).toContain('vgw_budget_refusals_total{client="app-other",window="monthly"} 0');
    // Only configured windows have series.
    expect(text).not.toContain('vgw_budget_limit_units{client="app-basic",window="monthly"}');
  });

  it('200 concurrent inquiries against 50 units: exactly 50 admitted and charged, 150 refused with nothing sent', async () => {
    const callsBefore = sim.inquiryCalls;
    const chargesBefore = totalCharges();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => inquire(replicas[i % 3].url, TEST_CLIENTS.basic.key)),
    );
    const admitted = answers.filter((res) => res.status === 200);
    const refused = answers.filter((res) => res.status !== 200);
    expect(admitted).toHaveLength(50);
    expect(refused).toHaveLength(150);
    refused.forEach(expectRefused);
    expect(refused[0].body.detail).toMatch(/daily budget of this client is exhausted: 0 unit\(s\) remain/);
    // Nothing sent for the refused: 50 calls, 50 charges, one per admitted trackId.
    expect(sim.inquiryCalls - callsBefore).toBe(50);
    expect(totalCharges() - chargesBefore).toBe(50);
    for (const res of admitted) expect(sim.chargesByTrackId.get(res.body.trackId as string)).toBe(1);
    // The reservation ran with the ledger's duty (one script): a refused inquiry never owed an
    // entry, and its record, written in the same batch, is deleted at once.
    const client = new Redis(redis.url);
    try {
      expect(await client.zcard('{vgw:acct}:ledger:due')).toBe(0);
      const records = async () => (await client.keys('{vgw:inq:*')).length;
      const deadline = Date.now() + 5_000;
      // The deletes leave with the 429s, not before them: polled, briefly.
      while ((await records()) > 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await records()).toBe(50);
    } finally {
      client.disconnect();
    }

    const own = await budget(replicas[1].url, TEST_CLIENTS.basic.key);
    expect(own).toEqual({
      clientId: 'app-basic',
      budgets: [
        {
          window: 'daily',
          limitUnits: 50,
          spentUnits: 50,
          reservedUnits: 0,
          remainingUnits: 0,
          resetsAt: expect.stringMatching(/T00:00:00\.000Z$/),
        },
      ],
    });
    const text = await (await fetch(`${replicas[2].url}/metrics`)).text();
    expect(text).toContain('vgw_budget_spent_units{client="app-basic",window="daily"} 50');
  }, 60_000);

  it('a mix of succeeding and failing answers ends with spent = the succeeded units; a finished key is replayed when exhausted', async () => {
    const key = randomUUID();
    const first = await inquire(replicas[0].url, TEST_CLIENTS.other.key, SHAHKAR, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        inquire(
          replicas[i % 3].url,
          TEST_CLIENTS.other.key,
          i % 2 === 0 ? SHAHKAR : { ...SHAHKAR, mobileNumber: REJECTED_MOBILE },
        ),
      ),
    );
    const succeeded = answers.filter((res) => res.status === 200).length + 1;
    const failed = answers.filter((res) => res.status === 422);
    failed.forEach((res) => expect(res.body.code).toBe('upstream_rejected'));
    answers.filter((res) => res.status === 429).forEach(expectRefused);
    expect(failed.length).toBeGreaterThan(0);
    expect(succeeded).toBeLessThanOrEqual(20);

    const state = await budget(replicas[2].url, TEST_CLIENTS.other.key);
    expect(state.budgets).toEqual([
      expect.objectContaining({
        window: 'monthly',
        limitUnits: 20,
        spentUnits: succeeded,
        reservedUnits: 0,
        remainingUnits: 20 - succeeded,
      }),
    ]);

    // Spend the rest, then: the finished key is replayed, a new inquiry is refused.
    const rest = await Promise.all(
      Array.from({ length: 20 - succeeded }, (_, i) => inquire(replicas[i % 3].url, TEST_CLIENTS.other.key)),
    );
    rest.forEach((res) => expect(res.status).toBe(200));
    const replay = await inquire(replicas[1].url, TEST_CLIENTS.other.key, SHAHKAR, { 'idempotency-key': key });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.trackId).toBe(first.body.trackId);
    const refusedKey = randomUUID();
    const refused = await inquire(replicas[2].url, TEST_CLIENTS.other.key, SHAHKAR, { 'idempotency-key': refusedKey });
    expectRefused(refused);
    expect(refused.body.detail).toMatch(/monthly budget/);
    // The refused key was released, not left in flight: the same key is refused again, not 409.
    expectRefused(await inquire(replicas[0].url, TEST_CLIENTS.other.key, SHAHKAR, { 'idempotency-key': refusedKey }));
  }, 60_000);

  it('GET /admin/budgets: every budget to a ledger:read key; 401 without credential, 403 for an inquiry key', async () => {
    const url = replicas[0].url;
    expect((await callGateway(url, 'GET', '/admin/budgets')).status).toBe(401);
    expect((await callGateway(url, 'GET', '/admin/budgets', { apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
    const all = await callGateway(url, 'GET', '/admin/budgets', { apiKey: OPS.key });
    expect(all.status).toBe(200);
    const budgets = all.body.budgets as Array<{ clientId: string; budgets: Array<Record<string, unknown>> }>;
    expect(budgets.map((b) => b.clientId)).toEqual(['app-basic', 'app-other', 'app-full', '*']);
    expect(budgets[0].budgets[0]).toMatchObject({ window: 'daily', spentUnits: 50, remainingUnits: 0 });
    expect(budgets[3].budgets[0]).toMatchObject({ window: 'daily', limitUnits: 100_000, reservedUnits: 0 });
    // Without an inquiry scope, no budget view.
    expect((await callGateway(url, 'GET', '/v1/budget', { apiKey: OPS.key })).status).toBe(403);
    expect((await callGateway(url, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.none.key })).status).toBe(403);
  });

  it('a replica SIGKILLed with reservations in flight: they are concluded as spent once the inquiry deadline has passed, not leaked', async () => {
    const doomed = await replica(SHORT_TIMEOUTS);
    const [survivor] = replicas;
    const before = (await budget(survivor.url, TEST_CLIENTS.full.key)).budgets as Array<Record<string, number>>;
    // The upstream processes (and charges) each inquiry, then holds its answer: 5 calls in flight.
    for (let i = 0; i < 5; i += 1) sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang-after-processing' });
    const received = new Promise<void>((resolve) => {
      let count = 0;
      const onInquiry = (event: { fault?: string }) => {
        if (event.fault !== 'hang-after-processing' || ++count < 5) return;
        sim.off('inquiry', onInquiry);
        resolve();
      };
      sim.on('inquiry', onInquiry);
    });
    const inFlight = Array.from({ length: 5 }, () => inquire(doomed.url, TEST_CLIENTS.full.key).catch(() => null));
    await received;
    doomed.process.kill('SIGKILL');
    const killedAt = Date.now();
    await doomed.exited;
    await Promise.all(inFlight);

    const held = (await budget(survivor.url, TEST_CLIENTS.full.key)).budgets as Array<Record<string, number>>;
    expect(held[0]).toMatchObject({ reservedUnits: 5, spentUnits: before[0].spentUnits });

    // Polled (no event marks a deadline passing): the next script run after it concludes them.
    let after = held;
    const giveUpAt = Date.now() + 20_000;
    while (after[0].reservedUnits !== 0 && Date.now() < giveUpAt) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = (await budget(survivor.url, TEST_CLIENTS.full.key)).budgets as Array<Record<string, number>>;
    }
    // Not before the deadline (5 s after the reservations, plus the 2 s margin), then as spent:
    // the records read `unknown`, possibly charged (here: charged).
    expect(Date.now() - killedAt).toBeGreaterThan(4_000);
    expect(after[0]).toMatchObject({ reservedUnits: 0, spentUnits: before[0].spentUnits + 5 });
  }, 60_000);
});
