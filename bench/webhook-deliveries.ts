/**
 * `npm run bench:webhooks`: webhook deliveries per second of one replica (docs/api.md §9), and
 * what the outbox trigger adds to writing a batch of ledger entries (a reconciliation's).
 *
 * 1. Trigger: BENCH_WEBHOOK_ENTRIES entries written in batches of 500 (LedgerStore.insert, as the
 *    drainer and a reconciliation write them) without endpoints, then with one endpoint
 *    subscribed to inquiry.settled (one outbox row per entry): entries/s each way.
 * 2. Deliveries: those rows delivered by one WebhookDispatcher (the replica's worker, at
 *    WEBHOOKS_MAX_IN_FLIGHT 32 and WEBHOOKS_POLL_MS 50) to a local node:http receiver that
 *    verifies every delivery with `standardwebhooks` and answers 204: deliveries/s.
 * Real PostgreSQL started for the run (test/support/postgres-server.ts: fsync off); the receiver
 * runs in this process, so its verification's CPU counts against the figure.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher.js';
import { WebhookEndpoints } from '../src/webhooks/webhook-endpoints.js';
import { WebhookMetrics } from '../src/webhooks/webhook-metrics.js';
import { WebhookOutbox } from '../src/webhooks/webhook-outbox.js';
import type { WebhookEndpoint, WebhooksConfig } from '../src/config/webhooks-config.js';
import { queuedEntry } from '../test/support/ledger-entries.js';
import { PostgresServer } from '../test/support/postgres-server.js';

const ENTRIES = Number(process.env.BENCH_WEBHOOK_ENTRIES ?? 5_000);
const BATCH = 500;
const key = Buffer.alloc(32, 7).toString('base64');
const verifier = new Webhook(key);

let received = 0;
let unverified = 0;
let allReceived: () => void = () => undefined;
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    try {
      verifier.verify(body, request.headers as Record<string, string>);
      received += 1;
    } catch {
      unverified += 1;
    }
    response.statusCode = 204;
    response.end();
    if (received === ENTRIES) allReceived();
  });
});
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
const port = (receiver.address() as { port: number }).port;

const endpoint: WebhookEndpoint = {
  id: 'bench',
  clientId: 'svc-a',
  url: new Secret(`http://127.0.0.1:${port}/hook`),
  keys: [new Secret(key)],
  events: ['inquiry.settled'],
};
const webhooks: WebhooksConfig = {
  configured: true,
  endpoints: [endpoint],
  allowHttp: true,
  deliver: true,
  delivery: {
    maxInFlight: 32,
    firstRetryMs: 1_000,
    retryForMs: 86_400_000,
    pollMs: 50,
    deliveredRetentionMs: 3_600_000,
  },
};
const config = { get: () => webhooks } as never;

const postgres = await PostgresServer.start();
const db = new PgLedgerDatabase(postgres.url);
const store = new LedgerStore(db, new StoreCipher([]), 90);

async function writeEntries(): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < ENTRIES; i += BATCH) {
    await store.insert(Array.from({ length: Math.min(BATCH, ENTRIES - i) }, () => queuedEntry()));
  }
  return (ENTRIES / (performance.now() - started)) * 1000;
}

await store.ready();
await store.insert([queuedEntry()]); // the month's partition, outside the timing
const without = await writeEntries();
await new WebhookOutbox(store).syncEndpoints([endpoint], { configChanged: true });
const withOne = await writeEntries();
console.log(
  `trigger: ${ENTRIES} entries in batches of ${BATCH}: ${without.toFixed(0)} entries/s without endpoints, ${withOne.toFixed(0)} with one subscribed`,
);

const metrics = new GatewayMetrics();
const dispatcher = new WebhookDispatcher(
  config,
  store,
  {} as never,
  new WebhookEndpoints(config, metrics),
  new WebhookMetrics(metrics),
);
const done = new Promise<void>((resolve) => (allReceived = resolve));
const started = performance.now();
dispatcher.onApplicationBootstrap();
await done;
const seconds = (performance.now() - started) / 1000;
await dispatcher.stop();
console.log(
  `deliveries: ${received} verified (${unverified} not) in ${seconds.toFixed(2)} s: ${(received / seconds).toFixed(0)} deliveries/s by one replica (32 in flight)`,
);
receiver.close();
await db.close();
await postgres.stop();
