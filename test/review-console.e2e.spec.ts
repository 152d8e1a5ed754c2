/**
 * Review of issue 35's reads: caller input that reaches PostgreSQL unchecked, and sums that
 * overflow PostgreSQL's integer.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { queuedEntry } from './support/ledger-entries.js';
import { apiKeysWith, startGateway, type RunningGateway } from './support/gateway.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const FINANCE = { clientId: 'finance', key: 'key-finance-review-0123456789', scopes: ['ledger:read'] };

let sim: UpstreamSimulator;
const engines: Array<[string, RunningGateway]> = [];

beforeAll(async () => {
  sim = new UpstreamSimulator();
  await sim.start(0);
  const env = {
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(FINANCE),
    COST_UNIT_PRICE: '{"amount":"1","currency":"IRR"}',
  };
  engines.push(['PostgreSQL server', await startGateway(env)]);
  engines.push([
    'PGlite',
    await startGateway({ ...env, LEDGER_DATABASE_URL: undefined, LEDGER_DATA_DIR: 'memory://' }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(engines.map(([, g]) => g.close()));
  await sim?.stop();
});

async function admin(g: RunningGateway, path: string) {
  const res = await fetch(`${g.url}${path}`, { headers: { 'x-api-key': FINANCE.key } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const cursor = (createdAt: string) =>
  Buffer.from(JSON.stringify([createdAt, '00000000-0000-4000-8000-000000000000'])).toString('base64url');

describe.each([0, 1])('engine %#', (i) => {
  it.each(['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-04-31T10:00:00Z'])(
    'a forged cursor at %s is 400 validation_failed naming after',
    async (createdAt) => {
      const g = engines[i][1];
      const answer = await admin(g, `/admin/inquiries?from=2026-01-01&to=2026-12-01&after=${cursor(createdAt)}`);
      expect(answer).toMatchObject({ status: 400, body: { code: 'validation_failed' } });
    },
  );

  it('trends, forecast and usage answer when a client spent more than 2^31 units (INQUIRY_PRICES in rials)', async () => {
    const g = engines[i][1];
    const clientId = `big-${i}`;
    // Three inquiries at the largest price INQUIRY_PRICES accepts (1e9 units).
    await g.app
      .get(LedgerStore)
      .insert(Array.from({ length: 3 }, () => queuedEntry({ clientId, costUnits: 1_000_000_000 })));
    const day = new Date().toISOString().slice(0, 10);
    const next = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const trends = await admin(g, `/admin/trends?from=${day}&to=${next}`);
    const forecast = await admin(g, `/admin/forecast`);
    const usage = await admin(g, `/admin/usage?from=${day}&to=${next}&period=day`);
    expect([trends.status, forecast.status, usage.status]).toEqual([200, 200, 200]);
  });
});
