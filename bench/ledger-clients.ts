/**
 * `npm run bench:ledger-clients`: the measurement behind docs/decisions/0010: the same batched
 * INSERT (unnest of arrays, 1 000 rows a statement) and keyset-paged SELECT (5 000 rows a page)
 * through node-postgres (`pg`), postgres.js (`postgres`, its `unsafe` with $n parameters, the
 * form that keeps one SQL text for every engine) and PGlite (in the process). PostgreSQL is a
 * server started for the run (test/support/postgres-server.ts: fsync off, as in the tests).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase, PgliteLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore, PAGE_ROWS } from '../src/ledger/ledger.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { PostgresServer } from '../test/support/postgres-server.js';

const ROWS = Number(process.env.BENCH_LEDGER_ROWS ?? 100_000);
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

async function measure(name: string, db: LedgerDatabase): Promise<string> {
  await migrate(db);
  await db.query('TRUNCATE ledger_entries, ledger_results').catch(() => undefined);
  await ensurePartitions(db, [start]);
  const store = new LedgerStore(db, cipher, 90);
  const data = rows();
  let began = performance.now();
  for (let i = 0; i < data.length; i += BATCH) await store.insert(data.slice(i, i + BATCH));
  const insertPerSecond = ROWS / ((performance.now() - began) / 1000);
  began = performance.now();
  let read = 0;
  for await (const _ of store.entries({ from: start, to: new Date('2030-02-01T00:00:00Z') })) read += 1;
  const readPerSecond = read / ((performance.now() - began) / 1000);
  if (read !== ROWS) throw new Error(`${name}: read ${read} of ${ROWS}`);
  await db.close();
  return `| ${name} | ${Math.round(insertPerSecond).toLocaleString('en')} | ${Math.round(readPerSecond).toLocaleString('en')} |`;
}

const server = await PostgresServer.start();
try {
  console.log(`${ROWS} rows, INSERT in batches of ${BATCH}, keyset pages of ${PAGE_ROWS}`);
  console.log('| client | insert rows/s | keyset read rows/s |\n|---|---:|---:|');
  for (let round = 0; round < 2; round += 1) {
    console.log(await measure('pg (node-postgres) → PostgreSQL', new PgLedgerDatabase(server.url)));
    console.log(await measure('postgres.js (unsafe, $n) → PostgreSQL', new PostgresJsDatabase(server.url)));
    console.log(await measure('pg interface → PGlite (in process)', await PgliteLedgerDatabase.open()));
  }
} finally {
  await server.stop();
}
