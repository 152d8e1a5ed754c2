/**
 * A server for the HTTP load benchmark, in its own process so that the load generator
 * (autocannon, in the parent), the gateway, the reference proxy and the upstream simulator do
 * not share one event loop, and so that each one's CPU time can be read on its own
 * (process.cpuUsage over IPC: it counts this process only, whatever else loads the machine).
 * Started by bench/lib/servers.ts with the spec as JSON in argv[2]; talks over the IPC channel
 * (bench/lib/ipc.ts) and exits when told to stop or when the parent goes away.
 */
import http from 'node:http';
import { GCProfiler, type GCProfilerResult } from 'node:v8';
import { createGateway } from '../src/bootstrap.js';
import { TEST_API_KEYS } from '../test/support/gateway.js';
import { UpstreamSimulator, type InquiryEvent } from '../test/upstream-simulator/upstream-simulator.js';
import type { Command, GatewaySpec, ProcessStats, Report, ServerSpec } from './lib/ipc.js';
import { startReferenceProxy } from './reference-proxy.js';

const PROBE_TIMEOUT_MS = 60_000;

function send(report: Report): void {
  process.send?.(report);
}

/**
 * Bytes promoted to the old generation by young collections, and full collections, since start-up:
 * what the helper threads' share of the CPU follows (an object that outlives two young
 * collections is copied, then marked by every full one). One profiler at a time, folded in at
 * each stats read.
 */
const gcTally = { promotedBytes: 0, fullCollections: 0 };
let gcProfiler = new GCProfiler();
gcProfiler.start();

/**
 * Where a young collection promotes to: old_space, and large_object_space for the young large
 * objects (new_large_object_space) that survive; reading old_space alone missed ~20 % of the
 * gateway's promotion (170 of 800 B per inquiry).
 */
const PROMOTED_TO = new Set(['old_space', 'large_object_space']);
const oldGenerationUsed = (stats: GCProfilerResult['statistics'][number]['beforeGC']) =>
  stats.heapSpaceStatistics.reduce(
    (sum, space) => (PROMOTED_TO.has(space.spaceName) ? sum + space.spaceUsedSize : sum),
    0,
  );

function foldGcProfile(): void {
  for (const gc of gcProfiler.stop()?.statistics ?? []) {
    if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkSweep') {
      gcTally.promotedBytes += Math.max(0, oldGenerationUsed(gc.afterGC) - oldGenerationUsed(gc.beforeGC));
    } else if (gc.gcType === 'MarkSweepCompact') {
      gcTally.fullCollections += 1;
    }
  }
  gcProfiler = new GCProfiler();
  gcProfiler.start();
}

function processStats(): ProcessStats {
  foldGcProfile();
  const cpu = process.cpuUsage();
  const mainThread = process.threadCpuUsage();
  const memory = process.memoryUsage();
  return {
    cpuUserUs: cpu.user,
    cpuSystemUs: cpu.system,
    rssBytes: memory.rss,
    heapUsedBytes: memory.heapUsed,
    heapTotalBytes: memory.heapTotal,
    externalBytes: memory.external,
    arrayBuffersBytes: memory.arrayBuffers,
    monotonicUs: Number(process.hrtime.bigint() / 1000n),
    cpuMainThreadUs: mainThread.user + mainThread.system,
    promotedBytes: gcTally.promotedBytes,
    fullCollections: gcTally.fullCollections,
  };
}

/** Posts the probe inquiry until it answers 200: token obtained and store (Redis) connected. */
async function untilServing(url: string, body: string, apiKey?: string): Promise<void> {
  const giveUpAt = Date.now() + PROBE_TIMEOUT_MS;
  let last = '';
  while (Date.now() < giveUpAt) {
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (apiKey) headers['x-api-key'] = apiKey;
      const response = await fetch(`${url}/v1/kyc/shahkar`, { method: 'POST', headers, body });
      last = `${response.status} ${(await response.text()).slice(0, 200)}`;
      if (response.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`server did not answer 200 within ${PROBE_TIMEOUT_MS} ms (last: ${last})`);
}

interface Running {
  url: string;
  stop(): Promise<void>;
  stats(): unknown;
  configure?(command: Extract<Command, { type: 'configure' }>): void;
}

async function startSimulator(latencyMs: number): Promise<Running> {
  // Credit for far more inquiries than any run makes (the default covers 10,000).
  const sim = new UpstreamSimulator({ latencyMs, credit: Number.MAX_SAFE_INTEGER });
  const url = await sim.start(0, '127.0.0.1');
  // Supplier failures on a share of the inquiries: after each answer, the failure of the one
  // supplier a standard inquiry uses is switched on or off so that `failRatio` of them fail
  // (upstream 502, code 15, ProviderError: a failure for the gateway's circuit breaker).
  let failRatio = 0;
  let owed = 0;
  let failedInquiries = 0;
  sim.on('inquiry', (event: InquiryEvent) => {
    if (event.status >= 500) failedInquiries += 1;
    if (failRatio <= 0) return;
    owed += failRatio;
    const failNext = owed >= 1;
    if (failNext) owed -= 1;
    sim.setSupplierFailure('primary', failNext ? 'error' : null);
  });
  return {
    url,
    stop: () => sim.stop(),
    stats: () => ({
      ...processStats(),
      tokenCalls: { ...sim.tokenCalls },
      inquiryCalls: sim.inquiryCalls,
      failedInquiries,
    }),
    configure: (command) => {
      failRatio = Math.min(1, Math.max(0, command.failRatio));
      owed = 0;
      sim.setSupplierFailure('primary', failRatio >= 1 ? 'error' : null);
    },
  };
}

async function startGatewayServer(spec: GatewaySpec): Promise<Running> {
  // The production logger (no `logger` option): JSON lines at LOG_LEVEL on stdout.
  const { app } = await createGateway({
    UPSTREAM_USERNAME: 'sandbox-user',
    UPSTREAM_PASSWORD: 'sandbox-password',
    API_KEYS: TEST_API_KEYS,
    // The ledger's PostgreSQL when the bench is given one (else the embedded PGlite).
    LEDGER_DATABASE_URL: process.env.LEDGER_DATABASE_URL,
    ...spec.env,
  });
  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.getHttpServer().address() as { port: number };
    const url = `http://127.0.0.1:${port}`;
    await untilServing(url, spec.probeBody, spec.probeApiKey);
    return { url, stop: () => app.close(), stats: processStats };
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
}

async function startSink(): Promise<Running> {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    stats: processStats,
  };
}

async function start(spec: ServerSpec): Promise<Running> {
  switch (spec.role) {
    case 'simulator':
      return startSimulator(spec.latencyMs);
    case 'gateway':
      return startGatewayServer(spec);
    case 'reference': {
      const proxy = await startReferenceProxy(spec.upstreamUrl, spec.redisUrl);
      try {
        await untilServing(proxy.url, spec.probeBody);
      } catch (error) {
        await proxy.close();
        throw error;
      }
      return { url: proxy.url, stop: () => proxy.close(), stats: processStats };
    }
    case 'sink':
      return startSink();
  }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ServerSpec;
  const running = await start(spec);
  send({ type: 'ready', url: running.url });

  let stopping = false;
  const shutdown = async (exitCode: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await running.stop().catch(() => undefined);
    process.exit(exitCode);
  };

  process.on('message', (message) => {
    const command = message as Command;
    if (command.type === 'stats') {
      send({ type: 'reply', id: command.id, ok: true, value: running.stats() });
    } else if (command.type === 'gc') {
      // Only with --expose-gc (the long run): RSS read after a full collection.
      (globalThis as { gc?: () => void }).gc?.();
      send({ type: 'reply', id: command.id, ok: true, value: running.stats() });
    } else if (command.type === 'configure') {
      running.configure?.(command);
      send({ type: 'reply', id: command.id, ok: true, value: running.stats() });
    } else if (command.type === 'stop') {
      // The parent waits for this process to exit; the exit code says whether stop() worked.
      stopping = true;
      void running.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    }
  });
  // The parent died or closed the channel: do not linger.
  process.on('disconnect', () => void shutdown(0));
}

main().catch((error: Error) => {
  send({ type: 'failed', message: error.stack ?? error.message });
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 100).unref();
});
