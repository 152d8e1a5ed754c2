/**
 * The refusal counts of a replica stopped by SIGTERM reach the embedded ledger (PGlite on disk)
 * through the shutdown step 'flush refusal counts' (the timed flush is 60 s away): a second
 * process on the same directory reads them in GET /admin/trends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway } from './support/gateway.js';
import { GatewayProcesses, untilEmbeddedLedgerOpen, type GatewayProcess } from './support/gateway-process.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const SPENT = { clientId: 'spent', key: 'key-spent-0123456789', scopes: ['kyc:shahkar'] };
const OPS = { clientId: 'ops', key: 'key-ops-0123456789', scopes: ['ledger:read'] };
const REFUSALS = 25;

const gateways = new GatewayProcesses();
let dataDir: string;
let sim: UpstreamSimulator;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'vgw-refusals-shutdown-'));
  sim = new UpstreamSimulator();
  await sim.start(0);
});

afterAll(async () => {
  await gateways.killAll();
  await sim?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<GatewayProcess> {
  const gateway = await gateways.start({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(SPENT, OPS),
    BUDGETS: JSON.stringify([{ clientId: SPENT.clientId, daily: 0 }]),
    LEDGER_DATABASE_URL: '',
    LEDGER_DATA_DIR: dataDir,
    LEDGER_REFUSAL_FLUSH_SECONDS: '60',
  });
  await untilEmbeddedLedgerOpen(gateway);
  return gateway;
}

it('SIGTERM: the refusals tallied since the last flush are in the ledger after a restart', async () => {
  const first = await start();
  const answers = await Promise.all(
    Array.from({ length: REFUSALS }, () =>
      callGateway(first.url, 'POST', '/v1/kyc/shahkar', { apiKey: SPENT.key, json: SHAHKAR }),
    ),
  );
  expect(answers.map((res) => res.status)).toEqual(Array(REFUSALS).fill(429));
  first.process.kill('SIGTERM');
  expect(await first.exited).toBe(0);
  expect(first.output()).toContain('step: flush refusal counts');

  const second = await start();
  const now = Date.now();
  const range = `from=${new Date(now - 86_400_000).toISOString()}&to=${new Date(now + 86_400_000).toISOString()}`;
  const res = await callGateway(second.url, 'GET', `/admin/trends?${range}`, { apiKey: OPS.key });
  expect(res.status).toBe(200);
  const refused = (res.body.rows as Array<{ clientId: string; refusedBudget: number }>)
    .filter((row) => row.clientId === SPENT.clientId)
    .reduce((sum, row) => sum + row.refusedBudget, 0);
  expect(refused).toBe(REFUSALS);
}, 120_000);
