/**
 * The unit price in force when an inquiry is opened is recorded with it and is what money is read
 * from (docs/decisions/0015-recorded-unit-price.md): a gateway priced at 25000 IRR makes two
 * inquiries (one ends `unknown`), is restarted priced at 30000.5 IRR (and 3 units an inquiry),
 * makes a third; usage is each inquiry's units × its own price, and a reconciliation of the
 * `unknown` after the change keeps the price it was made at. Ledger: a PostgreSQL server.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { sumOf } from '../src/ledger/money.js';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway, startGateway, TEST_CLIENTS, type RunningGateway } from './support/gateway.js';
import { PostgresServer } from './support/postgres-server.js';
import { freePort } from './support/redis-server.js';
import { untilEntriesWritten } from './support/ledger-entries.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADMIN = { clientId: 'finance', key: 'key-finance-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };
const BEFORE = { amount: '25000', currency: 'IRR' };
const AFTER = { amount: '30000.5', currency: 'IRR' };

let postgres: PostgresServer;
let sim: UpstreamSimulator;
let db: PgLedgerDatabase;
let gateway: RunningGateway | undefined;
let ops: string;

/** A gateway on the shared ledger, priced `price`, its ops listener on a port of its own. */
async function gatewayAt(price: { amount: string; currency: string }, env: Record<string, string> = {}) {
  const opsPort = await freePort();
  ops = `http://127.0.0.1:${opsPort}`;
  gateway = await startGateway({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(ADMIN),
    OPS_PORT: String(opsPort),
    LEDGER_DATABASE_URL: postgres.url,
    COST_UNIT_PRICE: JSON.stringify(price),
    ...env,
  });
  return gateway;
}

const admin = (path: string, init: RequestInit = {}) =>
  fetch(`${ops}${path}`, { ...init, headers: { 'x-api-key': ADMIN.key, ...(init.headers ?? {}) } });

/** This client's spend over the hour around now, summed over its rows (a month may turn within it). */
async function spent(): Promise<{ units: number; amount: string; currencies: string[] }> {
  const range = new URLSearchParams({
    from: new Date(Date.now() - 3_600_000).toISOString(),
    to: new Date(Date.now() + 3_600_000).toISOString(),
    period: 'month',
  });
  const answer = (await (await admin(`/admin/usage?${range.toString()}`)).json()) as {
    usage: Array<{ clientId: string; unitsSpent: number; spentAmount: string; currency: string }>;
  };
  const rows = answer.usage.filter((row) => row.clientId === TEST_CLIENTS.full.clientId);
  return {
    units: rows.reduce((sum, row) => sum + row.unitsSpent, 0),
    amount: rows.reduce((sum, row) => sumOf(sum, row.spentAmount), '0'),
    currencies: [...new Set(rows.map((row) => row.currency))],
  };
}

const shahkar = () =>
  callGateway(gateway!.url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR });

beforeAll(async () => {
  postgres = await PostgresServer.start();
  sim = new UpstreamSimulator();
  await sim.start(0);
  db = new PgLedgerDatabase(postgres.url);
  // The schema before the first poll (the gateways migrate it too: once, under a lock).
  await migrate(db);
});

afterAll(async () => {
  await gateway?.close();
  await db?.close();
  await sim?.stop();
  await postgres?.stop();
});

describe('a change of COST_UNIT_PRICE between inquiries', () => {
  let unknown: string;

  it('prices each inquiry at the price in force when it was opened: usage = units1 × price1 + units2 × price2', async () => {
    await gatewayAt(BEFORE);
    const paid = await shahkar();
    expect(paid.status).toBe(200);
    // A malformed answer: the outcome cannot be known, so `unknown`, possibly charged (spent).
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'malformed' });
    const lost = await shahkar();
    expect(lost.status).toBe(502);
    unknown = String(lost.body.trackId);
    await untilEntriesWritten(db, [String(paid.body.trackId), unknown], { entries: 2 });
    await gateway!.close();

    await gatewayAt(AFTER, {
      INQUIRY_PRICES: '{"shahkar":{"standard":3,"advanced":5},"iban":{"standard":1,"advanced":3}}',
    });
    const later = await shahkar();
    expect(later.status).toBe(200);
    await untilEntriesWritten(db, [String(later.body.trackId)], { entries: 1 });
    // 2 × 25000 (the paid one and the unknown) + 3 × 30000.5: never 5 × today's price (150002.5).
    expect(await spent()).toEqual({ units: 5, amount: '140001.5', currencies: ['IRR'] });
  }, 60_000);

  it("keeps the original inquiry's price when a reconciliation after the change resolves it", async () => {
    const reconciled = await admin('/admin/reconciliations', {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: `trackId\n${unknown}\n`,
    });
    expect(reconciled.status).toBe(200);
    expect(await reconciled.json()).toMatchObject({ resolved: { count: 1, trackIds: [unknown] } });
    const range = new URLSearchParams({
      from: new Date(Date.now() - 3_600_000).toISOString(),
      to: new Date(Date.now() + 3_600_000).toISOString(),
      trackId: unknown,
    });
    const lines = (await (await admin(`/admin/ledger?${range.toString()}`)).text()).trim().split('\n');
    // In (createdAt, trackId, kind) order: the resolution's kind sorts first.
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ kind: 'reconciled', revision: 1, charged: 'yes', unitPrice: '25000', currency: 'IRR' }),
      expect.objectContaining({ kind: 'settled', status: 'unknown', unitPrice: '25000', currency: 'IRR' }),
    ]);
    // The CSV's last two columns: the recorded price, after the columns other teams parse.
    const csv = await (await admin(`/admin/ledger?${range.toString()}`, { headers: { accept: 'text/csv' } })).text();
    const [header, resolution] = csv.split('\r\n');
    expect(header.endsWith(',upstreamMessage,unitPrice,currency,resolvedBy')).toBe(true);
    expect(resolution).toMatch(/,reconciled,.*,25000,IRR,reconciliation$/);
    // Resolved as charged: the same units at the same (original) price.
    expect(await spent()).toEqual({ units: 5, amount: '140001.5', currencies: ['IRR'] });
  });
});
