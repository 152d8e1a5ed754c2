/**
 * `npm run soak` (docs/soak.md): bench/soak/run.ts for SOAK_MINUTES (default 10; SOAK_SECONDS, as
 * CI's 60-second run, wins), seed SOAK_SEED (46), peak SOAK_PEAK_RPS (12/s). SOAK_REDIS_EMPTY=1:
 * Redis without persistence; SOAK_CLUSTER=1: a Redis Cluster; SOAK_REPORT_DIR: where run.json
 * goes; SOAK_CHART=docs/soak-chart.png: the chart of the run (Chromium headless). Exit 0 only when
 * the books balance.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chartSvg, renderPng, type Run } from './chart.js';
import type { UnitPrice } from './report.js';
import { runSoak, stopEverything } from './run.js';

// A run that fails midway still ends what it started: nothing is left running on the machine.
process.on('uncaughtException', (error) => {
  console.error(error);
  void stopEverything().finally(() => process.exit(2));
});

// Compiled as production runs it (test/support/gateway-process.ts's buildGateway reads sources
// relative to its own place, which is .build/ once compiled): into .build/soak-gateway.
const build = new URL('../../soak-gateway', import.meta.url).pathname;
const tsc = spawnSync(
  process.execPath,
  ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', build],
  {
    encoding: 'utf8',
  },
);
if (tsc.status !== 0) throw new Error(`tsc: ${tsc.stdout}${tsc.stderr}`);

const { imbalances, runFile } = await runSoak({
  minutes: process.env.SOAK_SECONDS ? Number(process.env.SOAK_SECONDS) / 60 : Number(process.env.SOAK_MINUTES ?? 10),
  seed: Number(process.env.SOAK_SEED ?? 46),
  peakRps: Number(process.env.SOAK_PEAK_RPS ?? 12),
  build,
  reportDir: process.env.SOAK_REPORT_DIR ?? new URL('../../soak-report', import.meta.url).pathname,
  unitPrice: JSON.parse(process.env.COST_UNIT_PRICE ?? '{"amount":"25000","currency":"IRR"}') as UnitPrice,
  redisEmpty: process.env.SOAK_REDIS_EMPTY === '1',
  cluster: process.env.SOAK_CLUSTER === '1',
  print: (line) => console.log(line),
}).catch(async (error: unknown) => {
  console.error(error);
  await stopEverything();
  process.exit(2);
});
if (process.env.SOAK_CHART) {
  renderPng(chartSvg(JSON.parse(readFileSync(runFile, 'utf8')) as Run), process.env.SOAK_CHART);
  console.log(`chart written to ${process.env.SOAK_CHART}`);
}
process.exit(imbalances === 0 ? 0 : 1);
