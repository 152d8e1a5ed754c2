/**
 * The embedded ledger's worker thread dies under a running gateway (issue 43, item 3): the
 * built gateway without Redis and PGlite on disk (the records beside the ledger), its worker made to crash by a
 * test-only preload (support/ledger-worker-crash.js: `process.exit` in the worker when the test
 * creates a file; nothing in the gateway can trigger it). Readiness goes 503 naming the ledger,
 * a new worker is made and readiness comes back; every inquiry charged before, during and after
 * the crash is in the ledger exactly once, and still after a SIGTERM and a restart; one that
 * meets the worker down is refused 503 `store_unavailable`, nothing sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway, TEST_CLIENTS } from './support/gateway.js';
import {
  buildGateway,
  GatewayProcesses,
  untilEmbeddedLedgerOpen,
  type GatewayProcess,
} from './support/gateway-process.js';
import { nextEvent } from './support/events.js';
import { parseExposition } from './support/prometheus.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADMIN = { clientId: 'finance', key: 'key-finance-0123456789', scopes: ['ledger:read'] };
const PRELOAD = new URL('./support/ledger-worker-crash.js', import.meta.url).pathname;
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const PERIOD = `from=${day(-1)}&to=${day(2)}`;

let scratch: string;
let sim: UpstreamSimulator;
const gateways = new GatewayProcesses();

beforeAll(async () => {
  buildGateway(); // compiled once here, not inside the test's time
  scratch = mkdtempSync(join(tmpdir(), 'vgw-ledger-worker-crash-'));
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
}, 180_000);

afterAll(async () => {
  await gateways.killAll();
  await sim?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const crashFile = (name = 'crash-ledger-worker') => join(scratch, name);

async function start(ledger = 'ledger', signal = crashFile(), untilOpen = true): Promise<GatewayProcess> {
  const gateway = await gateways.start({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(ADMIN),
    LEDGER_DATABASE_URL: '', // the embedded ledger, not the run's PostgreSQL
    LEDGER_DATA_DIR: join(scratch, ledger),
    NODE_OPTIONS: `--import=${PRELOAD}`,
    VGW_TEST_LEDGER_WORKER_CRASH_FILE: signal,
  });
  if (untilOpen) await untilEmbeddedLedgerOpen(gateway);
  return gateway;
}

/** Resolves once the gateway's log holds `text` (now or later). */
async function untilLogged(gateway: GatewayProcess, text: string): Promise<void> {
  if (!gateway.output().includes(text)) {
    await nextEvent(gateway.process.stdout!, 'data', () => gateway.output().includes(text), 60_000);
  }
}

/** Resolves once the gateway's log holds `text` `times` times. */
async function untilLoggedTimes(gateway: GatewayProcess, text: string, times: number): Promise<void> {
  const enough = () => gateway.output().split(text).length > times;
  if (!enough()) await nextEvent(gateway.process.stdout!, 'data', enough, 60_000);
}

/**
 * `count` Shahkar inquiries, 4 at a time; the trackIds of those answered 200. Without Redis the
 * records live beside the ledger (docs/decisions/0018): while its worker is down an inquiry is
 * refused 503 `store_unavailable`, nothing charged, and only then (`refusable`) is that allowed.
 */
async function inquiries(gateway: GatewayProcess, count: number, refusable = false): Promise<string[]> {
  const ids: string[] = [];
  let asked = 0;
  const one = async (): Promise<void> => {
    while (asked < count) {
      asked += 1;
      const { status, headers, body } = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
      });
      if (refusable && status === 503) expect(body.code).toBe('store_unavailable');
      else expect(status).toBe(200);
      if (status === 200) ids.push(headers.get('x-track-id')!);
    }
  };
  await Promise.all(Array.from({ length: 4 }, one));
  return ids;
}

/** How many settled entries the ledger holds for each trackId (read through the export). */
async function entriesByTrackId(gateway: GatewayProcess): Promise<Map<string, number>> {
  const response = await fetch(`${gateway.url}/admin/ledger?${PERIOD}`, { headers: { 'x-api-key': ADMIN.key } });
  expect(response.status).toBe(200);
  const counts = new Map<string, number>();
  for (const line of (await response.text()).split('\n').filter(Boolean)) {
    const { trackId, kind } = JSON.parse(line) as { trackId: string; kind: string };
    if (kind === 'settled') counts.set(trackId, (counts.get(trackId) ?? 0) + 1);
  }
  return counts;
}

/** Waits until every one of `ids` is in the ledger (the drainer retries with a backoff up to 30 s). */
async function untilWritten(gateway: GatewayProcess, ids: string[]): Promise<Map<string, number>> {
  for (const deadline = Date.now() + 60_000; ;) {
    const counts = await entriesByTrackId(gateway);
    if (ids.every((id) => counts.has(id))) return counts;
    if (Date.now() > deadline) throw new Error(`${ids.filter((id) => !counts.has(id)).length} entries not written`);
    await nextEvent(gateway.process.stdout!, 'data', () => true, 1_000).catch(() => undefined);
  }
}

const ready = async (gateway: GatewayProcess) => {
  const response = await fetch(`${gateway.url}/health/ready`);
  return { status: response.status, body: (await response.json()) as { details?: Record<string, unknown> } };
};

const restarts = async (gateway: GatewayProcess) =>
  parseExposition(await (await fetch(`${gateway.url}/metrics`)).text()).value('vgw_ledger_worker_restarts_total');

describe('a dead embedded ledger worker', () => {
  it('makes the gateway not ready, is re-created, and every charged entry is written exactly once, also after a restart', async () => {
    const gateway = await start();
    expect((await ready(gateway)).status).toBe(200);

    // The crash while inquiries flow: entries queued, a batch possibly in flight.
    const before = inquiries(gateway, 40, true);
    await nextEvent(sim, 'inquiry', () => true, 10_000);
    writeFileSync(crashFile(), '');
    await untilLogged(gateway, "the embedded ledger's worker exited (code 70)");
    const down = await ready(gateway);
    expect(down.status).toBe(503);
    expect(down.body.details?.ledger).toEqual({
      status: 'down',
      message: "the embedded ledger's worker died; a new one is being started",
    });
    // The start-up has finished and stays so (contract §4): only readiness waits for the new worker.
    expect((await fetch(`${gateway.url}/health/startup`)).status).toBe(200);
    // Counted at the death; the series exists from start-up (at 0 before).
    expect(await restarts(gateway)).toBe(1);
    // Meanwhile an inquiry is charged, its entry waiting in the queue, or refused 503 with nothing sent.
    const upstreamBefore = sim.inquiryCalls;
    const during = await inquiries(gateway, 10, true);
    expect(sim.inquiryCalls - upstreamBefore).toBe(during.length);

    await untilLogged(gateway, "the embedded ledger's worker was re-created");
    expect((await ready(gateway)).status).toBe(200);
    const after = await inquiries(gateway, 10);
    const charged = [...(await before), ...during, ...after];
    const counts = await untilWritten(gateway, charged);
    expect(charged.filter((id) => counts.get(id) !== 1)).toEqual([]);

    // SIGTERM and a start on the same directory: nothing lost, nothing doubled.
    gateway.process.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    const restarted = await start();
    const afterRestart = await entriesByTrackId(restarted);
    expect(charged.filter((id) => afterRestart.get(id) !== 1)).toEqual([]);
  }, 120_000);

  it('comes back ready when its worker dies during the first migration', async () => {
    // Its own file (the other test's gateway watches the first): the first worker exits at its
    // first answer, PGlite open and the first migration under way.
    const signal = crashFile('crash-first-migration');
    writeFileSync(signal, '');
    const gateway = await start('ledger-first-migration', signal, false);
    const settled = () =>
      /embedded ledger open and migrated|could not be opened; the gateway stays not ready/.test(gateway.output());
    await untilLogged(gateway, "the embedded ledger's worker exited (code 70)");
    if (!settled()) await nextEvent(gateway.process.stdout!, 'data', settled, 60_000);
    expect(gateway.output()).toContain('embedded ledger open and migrated');
    expect((await ready(gateway)).status).toBe(200);
    expect(await restarts(gateway)).toBe(1);
  }, 60_000);

  it('writes what is queued at a SIGTERM while a crash loop waits out its backoff', async () => {
    const signal = crashFile('crash-loop');
    const gateway = await start('ledger-crash-loop', signal);
    // Four quick deaths: the fifth worker's re-creation would wait 8 s (RESPAWN_MS), longer than
    // the shutdown's 5 s flush.
    let charged: string[] = [];
    for (let death = 1; death <= 5; death += 1) {
      // The last charged just before the last death: their entries may still be queued.
      if (death === 5) charged = await inquiries(gateway, 4);
      writeFileSync(signal, '');
      await untilLoggedTimes(gateway, "the embedded ledger's worker exited (code 70)", death);
      if (death < 5) await untilLoggedTimes(gateway, "the embedded ledger's worker was re-created", death);
    }
    // While the worker waits out its backoff, the records are out of reach: refused, nothing sent.
    expect(await inquiries(gateway, 2, true)).toEqual([]);
    gateway.process.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    const restarted = await start('ledger-crash-loop', signal);
    const counts = await entriesByTrackId(restarted);
    expect(charged.filter((id) => counts.get(id) !== 1)).toEqual([]);
  }, 120_000);
});
