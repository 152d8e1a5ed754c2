/**
 * The soak's 60-second day on every change (docs/soak.md, bench/soak/run.ts): 3 gateway processes,
 * Redis with its append-only file, PostgreSQL and the upstream simulator; replica SIGKILL, Redis
 * and PostgreSQL restarts, a slow, failing and charging-then-hanging upstream, revoked tokens and
 * a rolling restart on a schedule; then the books checked against the simulator's own charges.
 * It asserts the checks, never timings.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from '@jest/globals';
import { runSoak, stopEverything } from '../bench/soak/run.js';
import { buildGateway } from './support/gateway-process.js';

const reportDir = mkdtempSync(join(tmpdir(), 'vgw-soak-'));
afterAll(async () => {
  await stopEverything();
  rmSync(reportDir, { recursive: true, force: true });
});

it('a 60-second day with every fault: the books balance to the unit and every 5xx has its fault', async () => {
  const lines: string[] = [];
  const { imbalances, runFile } = await runSoak({
    minutes: 1,
    seed: 46,
    peakRps: 12,
    build: buildGateway(),
    reportDir,
    unitPrice: { amount: '25000', currency: 'IRR' },
    print: (line) => lines.push(line),
  });
  const run = JSON.parse(readFileSync(runFile, 'utf8')) as { faults: unknown[]; books: { charged: number } };
  // The report is the failure message: the imbalances and what the run knows about each trackId.
  expect({ imbalances, report: imbalances === 0 ? [] : lines }).toEqual({ imbalances: 0, report: [] });
  // Every scheduled fault ran (one that failed to inject is logged, not counted), and money moved.
  expect(run.faults).toHaveLength(8);
  expect(run.books.charged).toBeGreaterThan(20);
}, 300_000);
