/**
 * `npm run bench:ledger-clients`: the measurement behind docs/decisions/0010 and 0013: the same
 * batched INSERT (unnest of arrays, 1 000 rows a statement) and keyset-paged SELECT (5 000 rows
 * a page) through node-postgres (`pg`), postgres.js (`postgres`, its `unsafe` with $n
 * parameters, the form that keeps one SQL text for every engine), PGlite in the main thread
 * and PGlite in its worker thread (the gateway's client, on disk); for each, the main thread's
 * longest event-loop stall meanwhile, and the cost of one small query (a round trip: the
 * worker's RPC overhead). PostgreSQL is a server started for the run
 * (test/support/postgres-server.ts: fsync off, as in the tests).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { Secret } from '../src/config/secret.js';
import {
  LedgerDatabase,
  PgLedgerDatabase,
  PgliteLedgerDatabase,
  type SqlQueries,
} from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore, PAGE_ROWS } from '../src/ledger/ledger.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { PostgresServer } from '../test/support/postgres-server.js';

const ROWS = Number(process.env.BENCH_LEDGER_ROWS ?? 100_000);
/** Small queries timed one after the other: a round trip each. */
const SMALL_QUERIES = 2_000;
const BATCH = 1_000;
const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 1).toString('base64')) }]);
const start = new Date('2030-01-01T00:00:00Z');

function rows(): QueuedEntry[] {
  return Array.from({ length: ROWS }, (_, i) => ({
    trackId: randomUUID(),
    kind: 'settled',
    clientId: `svc-${i % 7}`,
    subjectSha256: 'a'.repeat(64),
    operation: 'iban',
    requestHandlingType: 'standard',
    status: 'succeeded',
    charged: 'yes',
    costUnits: 1,
    createdAt: new Date(start.getTime() + i * 10).toISOString(),
    completedAt: new Date(start.getTime() + i * 10 + 300).toISOString(),
    upstreamCode: 200,
    requestId: randomUUID(),
  }));
}

/** postgres.js behind the same interface: `unsafe` takes the $n text the other two run. */
class PostgresJsDatabase extends PgLedgerDatabase {
  private readonly sql: postgres.Sql;
  constructor(url: string) {
    super(url, { max: 1 });
    this.sql = postgres(url, { max: 4, onnotice: () => undefined });
  }
  override async query<R>(text: string, params: unknown[] = []): Promise<R[]> {
    return (await this.sql.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as R[];
  }
  override async close(): Promise<void> {
    await this.sql.end();
    await super.close();
  }
}

/** PGlite on the main thread, as the gateway ran it before decision 0013 (in memory, as then). */
class InThreadPglite extends LedgerDatabase {
  readonly embedded = true;
  private constructor(private readonly db: PGlite) {
    super();
  }
  static async open(): Promise<InThreadPglite> {
    return new InThreadPglite(await PGlite.create());
  }
  async query<R>(sql: string, params?: unknown[]): Promise<R[]> {
    return (await this.db.query<R>(sql, params)).rows;
  }
  transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) =>
      work({ query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows }),
    );
  }
  close(): Promise<void> {
    return this.db.close();
  }
}

/** One client's row of the table, or why it could not be measured. */
async function measure(name: string, db: LedgerDatabase): Promise<string> {
  try {
    return await measureOnce(name, db);
  } catch (error) {
    await db.close().catch(() => undefined);
    return `| ${name} | failed: ${(error as Error).message} | | | |`;
  }
}

async function measureOnce(name: string, db: LedgerDatabase): Promise<string> {
  await migrate(db);
  await db.query('TRUNCATE ledger_entries, ledger_results').catch(() => undefined);
  await ensurePartitions(db, [start]);
  let began = performance.now();
  for (let i = 0; i < SMALL_QUERIES; i += 1) await db.query('SELECT $1::int AS n', [i]);
  const smallQueryUs = ((performance.now() - began) * 1000) / SMALL_QUERIES;
  const store = new LedgerStore(db, cipher, 90);
  const data = rows();
  // The main thread's longest stall over the inserts and the read: the longest gap between the
  // ticks of a 5 ms timer, the last one to the end included (monitorEventLoopDelay records
  // nothing while the loop never turns, and PGlite in the thread can hold it the whole time).
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - 5);
    last = now;
  }, 5);
  began = performance.now();
  for (let i = 0; i < data.length; i += BATCH) await store.insert(data.slice(i, i + BATCH));
  const insertPerSecond = ROWS / ((performance.now() - began) / 1000);
  began = performance.now();
  let read = 0;
  for await (const _ of store.entries({ from: start, to: new Date('2030-02-01T00:00:00Z') })) read += 1;
  const readPerSecond = read / ((performance.now() - began) / 1000);
  clearInterval(ticker);
  stallMs = Math.max(stallMs, performance.now() - last - 5);
  if (read !== ROWS) throw new Error(`${name}: read ${read} of ${ROWS}`);
  await db.close();
  return `| ${name} | ${Math.round(insertPerSecond).toLocaleString('en')} | ${Math.round(readPerSecond).toLocaleString('en')} | ${smallQueryUs.toFixed(0)} | ${stallMs.toFixed(0)} |`;
}

const server = await PostgresServer.start();
const dataDir = mkdtempSync(join(tmpdir(), 'vgw-bench-ledger-'));
try {
  console.log(`${ROWS} rows, INSERT in batches of ${BATCH}, keyset pages of ${PAGE_ROWS}`);
  console.log(
    '| client | insert rows/s | keyset read rows/s | one small query (µs) | main thread max stall (ms) |\n|---|---:|---:|---:|---:|',
  );
  for (let round = 0; round < 2; round += 1) {
    console.log(await measure('pg (node-postgres) → PostgreSQL', new PgLedgerDatabase(server.url)));
    console.log(await measure('postgres.js (unsafe, $n) → PostgreSQL', new PostgresJsDatabase(server.url)));
    console.log(await measure('PGlite in the main thread (in memory)', await InThreadPglite.open()));
    console.log(await measure('PGlite in a worker thread (in memory)', await PgliteLedgerDatabase.open()));
    console.log(await measure('PGlite in a worker thread (on disk)', await PgliteLedgerDatabase.open(dataDir)));
    rmSync(dataDir, { recursive: true, force: true });
  }
} finally {
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
