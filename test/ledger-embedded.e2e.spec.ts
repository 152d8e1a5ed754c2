/**
 * The embedded ledger as a single-node install runs it (no LEDGER_DATABASE_URL): PGlite in a
 * worker thread of the built gateway, on disk in LEDGER_DATA_DIR. Three gateway processes in a
 * row on one directory, and a fourth refused:
 * 1. After readiness, inquiries, ledger reads and a reconciliation upload keep the event loop's
 *    p99 delay under 50 ms (and its worst under 200 ms on a shared CI machine): the gateway's own
 *    monitorEventLoopDelay (prom-client's nodejs_eventloop_lag_*, reset at each scrape).
 * 2. SIGTERM, then a start on the same directory: every entry is still there.
 * 3. SIGKILL with inquiries in flight (once the earlier ones were written), then a start: every
 *    written entry is still there (the dead process's lock does not block it), and a second
 *    process on the directory fails at start, naming it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import { freePort } from './support/redis-server.js';
import { apiKeysWith, callGateway, TEST_CLIENTS } from './support/gateway.js';
import {
  buildGateway,
  startGatewayProcess,
  untilEmbeddedLedgerOpen,
  type GatewayProcess,
} from './support/gateway-process.js';
import { nextEvent } from './support/events.js';
import { parseExposition } from './support/prometheus.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADMIN = { clientId: 'finance', key: 'key-finance-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
/** A period holding every inquiry of the run, whatever the hour (UTC dates). */
const PERIOD = `from=${day(-1)}&to=${day(2)}`;

let outDir: string;
let dataDir: string;
let sim: UpstreamSimulator;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  outDir = buildGateway();
  dataDir = mkdtempSync(join(tmpdir(), 'vgw-ledger-embedded-'));
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
}, 180_000);

afterAll(async () => {
  for (const gateway of running) gateway.process.kill('SIGKILL');
  await Promise.all(running.map((gateway) => gateway.exited));
  await sim?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A gateway on the embedded ledger in `dataDir`, once it is ready (opened and migrated). */
async function start(): Promise<GatewayProcess> {
  const gateway = await startGatewayProcess(outDir, {
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(ADMIN),
    LEDGER_DATABASE_URL: '', // not the run's PostgreSQL: the embedded ledger
    LEDGER_DATA_DIR: dataDir,
  });
  running.push(gateway);
  // Its main thread ahead of the machine's other processes (the other tests' when run in
  // parallel, on 2 cores): the delay measured is the gateway's own, not time it was preempted.
  // Not permitted unless root: then it runs at the default priority.
  try {
    setPriority(gateway.process.pid!, -10);
  } catch {
    // EACCES
  }
  await untilEmbeddedLedgerOpen(gateway);
  expect((await fetch(`${gateway.url}/health/ready`)).status).toBe(200);
  return gateway;
}

async function stop(gateway: GatewayProcess, signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null> {
  gateway.process.kill(signal);
  const code = await gateway.exited;
  running.splice(running.indexOf(gateway), 1);
  return code;
}

/** `count` Shahkar inquiries, `concurrency` at a time; their trackIds. */
async function inquiries(gateway: GatewayProcess, count: number, concurrency = 16): Promise<string[]> {
  const ids: string[] = [];
  const one = async (): Promise<void> => {
    while (ids.length < count) {
      ids.push(''); // reserves a slot before the await
      const { status, headers } = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
      });
      expect(status).toBe(200);
      ids[ids.indexOf('')] = headers.get('x-track-id')!;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
  return ids;
}

const admin = (gateway: GatewayProcess, path: string, init: RequestInit = {}) =>
  fetch(`${gateway.url}${path}`, { ...init, headers: { 'x-api-key': ADMIN.key, ...init.headers } });

/** The trackIds of the ledger's settled entries, read through the export. */
async function ledgerTrackIds(gateway: GatewayProcess): Promise<Set<string>> {
  const response = await admin(gateway, `/admin/ledger?${PERIOD}`);
  expect(response.status).toBe(200);
  const lines = (await response.text()).split('\n').filter(Boolean);
  return new Set(lines.map((line) => (JSON.parse(line) as { trackId: string }).trackId));
}

/** Waits until every one of `ids` is in the ledger (the drain writes within about a second). */
async function untilWritten(gateway: GatewayProcess, ids: string[]): Promise<void> {
  for (const deadline = Date.now() + 30_000; ;) {
    const written = await ledgerTrackIds(gateway);
    if (ids.every((id) => written.has(id))) return;
    if (Date.now() > deadline) throw new Error(`${ids.filter((id) => !written.has(id)).length} entries not written`);
    await nextEvent(gateway.process.stdout!, 'data', () => true, 1_000).catch(() => undefined);
  }
}

/** The gateway's event-loop delay since the last scrape (prom-client resets it at each one), ms. */
async function eventLoopDelayMs(gateway: GatewayProcess): Promise<{ p99: number; max: number }> {
  const exposition = parseExposition(await (await fetch(`${gateway.url}/metrics`)).text());
  return {
    p99: exposition.value('nodejs_eventloop_lag_p99_seconds')! * 1000,
    max: exposition.value('nodejs_eventloop_lag_max_seconds')! * 1000,
  };
}

describe('the embedded ledger on disk (LEDGER_DATA_DIR)', () => {
  it('keeps the event loop p99 under 50 ms, and keeps every entry across SIGTERM and SIGKILL; one process per directory', async () => {
    // 1. Inquiries, ledger reads and a reconciliation upload at once, after readiness. A first
    // round compiles the inquiry and ledger paths (V8's JIT); then the histogram is reset.
    const first = await start();
    const warm = await inquiries(first, 20);
    await untilWritten(first, warm);
    await eventLoopDelayMs(first);
    const load = inquiries(first, 400);
    const reads = Array.from({ length: 5 }, () => ledgerTrackIds(first));
    const usage = admin(first, `/admin/usage?${PERIOD}`);
    const upload = admin(first, `/admin/reconciliations?${PERIOD}`, {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: `trackId\n${warm.join('\n')}\n`,
    });
    const written = [...warm, ...(await load)];
    await untilWritten(first, written);
    await Promise.all(reads);
    expect((await usage).status).toBe(200);
    expect((await upload).status).toBe(200);
    // p99 under 50 ms is the promise; the single worst delay also counts the scheduler of a CI
    // machine running other suites on its two cores (37-112 ms seen there, 12-32 ms quiet), so it
    // is held to 200 ms: PGlite on the main thread stalled 5 s here (docs/decisions/0013).
    const delay = await eventLoopDelayMs(first);
    console.log(
      `embedded ledger under load: event loop p99 ${delay.p99.toFixed(1)} ms, max ${delay.max.toFixed(1)} ms`,
    );
    expect(delay.p99).toBeLessThan(50);
    expect(delay.max).toBeLessThan(200);

    // 2. SIGTERM, then a start on the same directory.
    expect(await stop(first, 'SIGTERM')).toBe(0);
    const second = await start();
    const afterTerm = await ledgerTrackIds(second);
    expect(written.filter((id) => !afterTerm.has(id))).toEqual([]);

    // 3. More entries written, then SIGKILL with inquiries in flight.
    written.push(...(await inquiries(second, 100)));
    await untilWritten(second, written);
    const inFlight = inquiries(second, 200).catch(() => []);
    await nextEvent(sim, 'inquiry', () => true, 10_000).catch(() => undefined);
    await stop(second, 'SIGKILL');
    await inFlight;
    const third = await start();
    const afterKill = await ledgerTrackIds(third);
    expect(written.filter((id) => !afterKill.has(id))).toEqual([]);

    // A second process on the directory fails at start, naming it.
    const refused = spawn(process.execPath, [join(outDir, 'main.js')], {
      env: {
        PATH: process.env.PATH,
        PORT: String(await freePort()),
        UPSTREAM_BASE_URL: sim.baseUrl,
        UPSTREAM_USERNAME,
        UPSTREAM_PASSWORD,
        API_KEYS: apiKeysWith(),
        LEDGER_DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    refused.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    refused.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await nextEvent<number | null>(refused, 'exit', () => true, 30_000);
    expect(code).not.toBe(0);
    expect(output).toContain(`LEDGER_DATA_DIR ${dataDir} is in use by another gateway process`);
    // …and the holder serves on.
    expect((await fetch(`${third.url}/health/ready`)).status).toBe(200);
  }, 240_000);
});
