/**
 * `npm run bench:ledger`: the ledger's throughput (docs/performance.md, "Ledger").
 *
 * 1. Drain: 100 000 settled entries (sealed, with upstream data) queued on a Redis stream while
 *    PostgreSQL is "down", then drained by one and by two drainers (LedgerDrainer.drainOnce in
 *    a loop, as the replicas run it): entries/s into PostgreSQL, exactly once.
 * 2. Export: 1 000 000 entries streamed by GET /admin/ledger (NDJSON and CSV) from an in-process
 *    gateway, read and discarded by a fetch client in the same process: rows/s, and the peak
 *    RSS growth over the run (sampled every 100 ms after a collection).
 * 3. Reconciliation: the same 1 000 000 trackIds sent as the provider's CSV list to POST
 *    /admin/reconciliations, streamed from a generator: rows/s, peak RSS growth, and the same
 *    file sent a second time (it must append nothing).
 * Real redis-server and PostgreSQL started for the run (test/support/*: fsync off).
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { DEFAULT_INQUIRY_PRICES } from '../src/config/budget-config.js';
import { createGateway } from '../src/bootstrap.js';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { LedgerDrainer } from '../src/ledger/ledger-drainer.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerMetrics } from '../src/ledger/ledger-metrics.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { sha256 } from '../test/support/gateway.js';
import { PostgresServer } from '../test/support/postgres-server.js';
import { RedisServer } from '../test/support/redis-server.js';

const DRAIN_ENTRIES = Number(process.env.BENCH_LEDGER_DRAIN ?? 100_000);
const EXPORT_ROWS = Number(process.env.BENCH_LEDGER_EXPORT ?? 1_000_000);
const key = Buffer.alloc(32, 9).toString('base64');
const cipher = new StoreCipher([{ id: 'k1', key: new Secret(key) }]);
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

const [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
const config = { get: () => ({ retentionDays: 1826, resultRetentionDays: 90, drain: true }) } as never;

function settledRecord(i: number) {
  const at = Date.now() - 60_000 + (i % 60_000);
  return {
    trackId: randomUUID(),
    clientId: `svc-${i % 5}`,
    subjectSha256: 'c'.repeat(64),
    operation: 'iban' as const,
    requestHandlingType: 'standard' as const,
    status: 'succeeded',
    createdAt: new Date(at).toISOString(),
    completedAt: new Date(at + 400).toISOString(),
    upstream: { code: 200 },
    data: {
      iban: 'IR820540102680020817909002',
      bankName: 'Bank Melli Iran',
      depositOwners: [{ firstName: 'Ali', lastName: 'Rezaei' }],
    },
    charged: 'yes' as const,
    requestId: randomUUID(),
  };
}

async function drain(drainers: number, prefix: string): Promise<string> {
  const clients = Array.from({ length: drainers + 1 }, () => new Redis(redis.url));
  const dbs = Array.from({ length: drainers }, () => new PgLedgerDatabase(postgres.url));
  const writer = new RedisLedgerQueue(clients[0], new RedisKeys(prefix), cipher, prices);
  for (let i = 0; i < DRAIN_ENTRIES; i += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, DRAIN_ENTRIES - i) }, (_, j) => writer.settled(settledRecord(i + j))),
    );
  }
  const workers = dbs.map((db, n) => {
    const queue = new RedisLedgerQueue(clients[n + 1], new RedisKeys(prefix), cipher, prices);
    return new LedgerDrainer(
      config,
      db,
      queue,
      new LedgerStore(db, cipher, 90),
      new LedgerMetrics(new GatewayMetrics()),
    );
  });
  await workers[0].drainOnce().catch(() => undefined); // migrations and partitions before the clock starts
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    workers.map(async (w) => {
      while ((await w.drainOnce()) > 0);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const cpuPerEntry = (used.user + used.system) / DRAIN_ENTRIES;
  const [{ n }] = await dbs[0].query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
  await Promise.all(dbs.map((db) => db.close()));
  clients.forEach((c) => c.disconnect());
  return `| ${drainers} drainer(s) | ${DRAIN_ENTRIES} | ${seconds.toFixed(1)} s | ${Math.round(DRAIN_ENTRIES / seconds).toLocaleString('en')} entries/s | ${cpuPerEntry.toFixed(1)} µs | rows now ${n} |`;
}

/** Peak RSS growth over `run`, sampled every 100 ms after a full collection. */
async function peakRssGrowth<T>(run: () => Promise<T>): Promise<{ result: T; peakMiB: number }> {
  gc();
  const rssBefore = process.memoryUsage().rss;
  let peak = 0;
  const sampler = setInterval(() => {
    gc();
    peak = Math.max(peak, process.memoryUsage().rss - rssBefore);
  }, 100);
  try {
    return { result: await run(), peakMiB: peak / 2 ** 20 };
  } finally {
    clearInterval(sampler);
  }
}

/** The provider's list as CSV, generated as it is sent: a header, then one trackId a row. */
function providerList(trackIds: readonly string[]): Readable {
  return Readable.from(
    (function* () {
      yield 'trackId\n';
      for (let i = 0; i < trackIds.length; i += 10_000) yield trackIds.slice(i, i + 10_000).join('\n') + '\n';
    })(),
  );
}

async function reconcileRun(url: string, trackIds: readonly string[], label: string): Promise<string> {
  const started = performance.now();
  const { result: report, peakMiB } = await peakRssGrowth(async () => {
    const res = await fetch(`${url}/admin/reconciliations`, {
      method: 'POST',
      headers: { 'x-api-key': 'key-bench-admin-0123456789', 'content-type': 'text/csv' },
      body: Readable.toWeb(providerList(trackIds)) as ReadableStream,
      duplex: 'half',
    });
    if (res.status !== 200) throw new Error(`reconciliation answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as Record<string, { count: number }>;
  });
  const seconds = (performance.now() - started) / 1000;
  const counts = Object.entries(report)
    .filter(([, v]) => typeof v === 'object' && v !== null && 'count' in v)
    .map(([k, v]) => `${k} ${v.count.toLocaleString('en')}`)
    .join(', ');
  return `| ${label} | ${trackIds.length.toLocaleString('en')} rows | ${seconds.toFixed(1)} s | ${Math.round(trackIds.length / seconds).toLocaleString('en')} rows/s | peak RSS growth ${peakMiB.toFixed(1)} MiB | ${counts} |`;
}

async function exportRun(url: string, accept: string): Promise<string> {
  const started = performance.now();
  const { result: lines, peakMiB } = await peakRssGrowth(async () => {
    const res = await fetch(`${url}/admin/ledger?from=2037-01-01&to=2037-02-01`, {
      headers: { 'x-api-key': 'key-bench-admin-0123456789', accept },
    });
    let count = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
      for (const byte of chunk) if (byte === 10) count += 1;
    return count;
  });
  const seconds = (performance.now() - started) / 1000;
  return `| ${accept} | ${lines.toLocaleString('en')} lines | ${seconds.toFixed(1)} s | ${Math.round(lines / seconds).toLocaleString('en')} rows/s | peak RSS growth ${peakMiB.toFixed(1)} MiB |`;
}

try {
  console.log('## Drain (Redis stream → PostgreSQL, batches of 1000, sealed entries with data)\n');
  console.log(
    '| drainers | entries | time | throughput | gateway-side CPU per entry | check |\n|---|---:|---:|---:|---:|---|',
  );
  console.log(await drain(1, 'bench1'));
  await new PgLedgerDatabase(postgres.url).query('TRUNCATE ledger_entries, ledger_results').catch(() => undefined);
  console.log(await drain(2, 'bench2'));

  console.log(
    `\n## Export of ${EXPORT_ROWS.toLocaleString('en')} entries (GET /admin/ledger, in-process gateway and reader)\n`,
  );
  const db = new PgLedgerDatabase(postgres.url);
  const store = new LedgerStore(db, cipher, 90);
  const base = Date.UTC(2037, 0, 1);
  const fill = performance.now();
  const trackIds: string[] = [];
  for (let i = 0; i < EXPORT_ROWS; i += 10_000) {
    const batch: QueuedEntry[] = Array.from({ length: 10_000 }, (_, j) => ({
      trackId: trackIds[trackIds.push(randomUUID()) - 1],
      kind: 'settled',
      clientId: `svc-${(i + j) % 7}`,
      subjectSha256: 'd'.repeat(64),
      operation: 'shahkar',
      requestHandlingType: 'standard',
      status: 'succeeded',
      charged: 'yes',
      costUnits: 1,
      createdAt: new Date(base + (i + j) * 2_000).toISOString(),
      completedAt: new Date(base + (i + j) * 2_000 + 300).toISOString(),
      upstreamCode: 200,
      requestId: randomUUID(),
    }));
    await store.insert(batch);
  }
  console.log(`(filled in ${((performance.now() - fill) / 1000).toFixed(0)} s)\n`);
  await db.close();
  const { app } = await createGateway(
    {
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9',
      UPSTREAM_USERNAME: 'u',
      UPSTREAM_PASSWORD: 'p',
      LOG_LEVEL: 'silent',
      LEDGER_DATABASE_URL: postgres.url,
      API_KEYS: JSON.stringify([
        {
          clientId: 'bench',
          keySha256: sha256('key-bench-admin-0123456789'),
          scopes: ['ledger:read', 'ledger:reconcile'],
        },
      ]),
    },
    { logger: false },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.getHttpServer().address() as { port: number };
  console.log('| format | rows | time | throughput | memory |\n|---|---:|---:|---:|---|');
  for (const accept of ['application/x-ndjson', 'text/csv'])
    console.log(await exportRun(`http://127.0.0.1:${port}`, accept));

  console.log(
    `\n## Reconciliation of ${EXPORT_ROWS.toLocaleString('en')} charged trackIds (POST /admin/reconciliations, CSV streamed)\n`,
  );
  console.log('| send | rows | time | throughput | memory | report |\n|---|---:|---:|---:|---|---|');
  console.log(await reconcileRun(`http://127.0.0.1:${port}`, trackIds, 'first'));
  console.log(await reconcileRun(`http://127.0.0.1:${port}`, trackIds, 'the same file again'));
  await app.close();
} finally {
  await Promise.all([redis.stop(), postgres.stop()]);
}
