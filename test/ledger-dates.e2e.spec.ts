/**
 * One date rule on both engines (docs/api.md §6, issue 33): the same administration requests to a
 * gateway on the run's PostgreSQL server and to one on PGlite give the same answers. A date
 * outside what both store, or not a calendar date, is 400 `validation_failed` naming the field
 * before any query (year 0 was 503 on PGlite and 200 on a server); the widest range both store is
 * 200 on both. A ledger that cannot answer is 503 with a detail of its own, logged with its code.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EmbeddedLedgerFreezer } from '../src/ledger/embedded-freeze.js';
import { CapturedLog } from './support/captured-log.js';
import { apiKeysWith, startGateway, type RunningGateway } from './support/gateway.js';
import { freePort } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const FINANCE = { clientId: 'finance', key: 'key-finance-dates-0123456789', scopes: ['ledger:read'] };

let sim: UpstreamSimulator;
const engines: Array<[string, RunningGateway]> = [];

beforeAll(async () => {
  sim = new UpstreamSimulator();
  await sim.start(0);
  const env = { UPSTREAM_BASE_URL: sim.baseUrl, API_KEYS: apiKeysWith(FINANCE) };
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

// PGlite has no autovacuum: the embedded ledger alone is frozen by the gateway (embedded-freeze.ts).
it('runs the freezer of the embedded ledger, and none beside a PostgreSQL server', () => {
  expect(engines.map(([name, g]) => [name, g.app.get(EmbeddedLedgerFreezer) instanceof EmbeddedLedgerFreezer])).toEqual(
    [
      ['PostgreSQL server', false],
      ['PGlite', true],
    ],
  );
});

async function admin(g: RunningGateway, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${g.url}${path}`, { headers: { 'x-api-key': FINANCE.key } });
  const text = await res.text();
  return {
    status: res.status,
    body: /^application\/(problem\+)?json/.test(res.headers.get('content-type') ?? '')
      ? (JSON.parse(text) as Record<string, unknown>)
      : {},
  };
}

describe('the same date rule on PostgreSQL and PGlite', () => {
  it.each([
    ['from=0000-01-01&to=9999-12-31', 'from'],
    ['from=2026-01-01&to=10000-01-01', 'to'],
    ['from=2026-02-30&to=2026-03-01', 'from'],
    ['from=2026-01-01&to=2026-01-01T24:00:00Z', 'to'],
    ['from=0001-01-01T00:00:00%2B01:00&to=2026-01-01', 'from'],
    ['from=2026-01-02&to=2026-01-01', 'to'],
  ])('%s is 400 validation_failed naming %s, on every route', async (query, field) => {
    for (const route of ['/admin/usage', '/admin/ledger']) {
      const answers = await Promise.all(engines.map(([, g]) => admin(g, `${route}?${query}`)));
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body).toMatchObject({ code: 'validation_failed', errors: [{ field }] });
      }
    }
  });

  it('the widest range both store (0001-01-01 to 9999-12-31) is 200 on both', async () => {
    for (const route of ['/admin/usage?', '/admin/ledger?']) {
      const answers = await Promise.all(engines.map(([, g]) => admin(g, `${route}from=0001-01-01&to=9999-12-31`)));
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
    }
  }, 60_000);
});

describe('a ledger that cannot answer', () => {
  it("is 503 store_unavailable with the ledger's own detail, its failure logged with its code", async () => {
    const log = new CapturedLog();
    const unreachable = `postgres://vgw@127.0.0.1:${await freePort()}/ledger`;
    const g = await startGateway(
      { UPSTREAM_BASE_URL: sim.baseUrl, API_KEYS: apiKeysWith(FINANCE), LEDGER_DATABASE_URL: unreachable },
      { logger: log },
    );
    try {
      const answer = await admin(g, '/admin/usage?from=2026-01-01&to=2026-02-01');
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'store_unavailable' });
      expect(answer.body.detail).toMatch(/^The ledger could not complete the usage/);
      expect(answer.body.detail).not.toMatch(/verification service/);
      expect(log.lines).toContainEqual(expect.stringMatching(/^error: Ledger: ledger usage failed: ECONNREFUSED/));
    } finally {
      await g.close();
    }
  });
});
