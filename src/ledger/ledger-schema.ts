import type { LedgerDatabase, SqlQueries } from './ledger-database.js';
import { MIGRATIONS } from './ledger-migrations.js';
import { subtractFromRollups } from './ledger-rollups.js';

/** A key of its own for pg_advisory_xact_lock: 'vgw-ledger' as a 64-bit number. */
const MIGRATION_LOCK = 0x7667776c6564676en;

/** Applies what is missing, under the lock; returns the versions this call applied. */
export async function migrate(db: LedgerDatabase): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
    await tx.query(`CREATE TABLE IF NOT EXISTS ledger_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM ledger_migrations')).map((row) => row.version),
    );
    const applied: number[] = [];
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue;
      await execute(tx, migration.sql);
      await tx.query('INSERT INTO ledger_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    return applied;
  });
}

/**
 * Statements one by one: a prepared (parameterised) query holds one statement only. A function's
 * body, quoted `$fn$…$fn$`, keeps its own semicolons (migration 10's triggers).
 */
async function execute(tx: SqlQueries, sql: string): Promise<void> {
  const statements: string[] = [''];
  for (const part of sql.replace(/--.*$/gm, '').split(/(\$fn\$[\s\S]*?\$fn\$)/)) {
    const pieces = part.startsWith('$fn$') ? [part] : part.split(';');
    statements[statements.length - 1] += pieces[0];
    statements.push(...pieces.slice(1));
  }
  for (const statement of statements.map((s) => s.trim()).filter(Boolean)) await tx.query(statement);
}

export const PARTITIONED_TABLES = ['ledger_entries', 'ledger_results'] as const;

/** The first instant (UTC) of the month `offset` months after the one holding `at`. */
export function monthStart(at: Date, offset = 0): Date {
  // Not Date.UTC: it reads years 0 to 99 as 1900 to 1999, and an entry of year 1 then found no
  // partition for ever (test/ledger-parking.integration.spec.ts).
  const start = new Date(0);
  start.setUTCFullYear(at.getUTCFullYear(), at.getUTCMonth() + offset, 1);
  return start;
}

/**
 * A month's first instant as PostgreSQL reads it: toISOString writes year 10000 as
 * `+010000`, which it refuses, so December 9999's partition could not be made.
 */
function boundOf(month: Date): string {
  const year = String(month.getUTCFullYear()).padStart(4, '0');
  return `${year}-${String(month.getUTCMonth() + 1).padStart(2, '0')}-01T00:00:00Z`;
}

function partitionName(table: string, month: Date): string {
  return `${table}_${month.getUTCFullYear()}${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/**
 * Creates the monthly partitions (UTC months) of both tables for each month holding one of
 * `instants`, if missing. Concurrent replicas may race on one: the loser's error is ignored
 * once the partition exists.
 */
export async function ensurePartitions(db: LedgerDatabase, instants: Iterable<Date>): Promise<void> {
  const months = new Map<number, Date>();
  for (const at of instants) {
    const month = monthStart(at);
    months.set(month.getTime(), month);
  }
  for (const month of months.values()) {
    for (const table of PARTITIONED_TABLES) {
      const sql = `CREATE TABLE IF NOT EXISTS ${partitionName(table, month)} PARTITION OF ${table}
        FOR VALUES FROM ('${boundOf(month)}') TO ('${boundOf(monthStart(month, 1))}')`;
      try {
        await db.query(sql);
      } catch (error) {
        // 42P07 duplicate table / 23505 catalog race: another replica made it first.
        const code = (error as { code?: string }).code;
        if (code !== '42P07' && code !== '23505') throw error;
      }
    }
  }
}

/**
 * Retention (docs/operations.md, "Ledger"): drops every monthly partition whose whole month
 * lies before `now` minus the retention (entries) or the result retention (sealed data).
 * A DROP of a whole partition, cheap at any size; no entry is updated or deleted. The
 * tracker's rows (ledger_tracking, unpartitioned) of the dropped months are deleted with them.
 */
export async function dropExpiredPartitions(
  db: LedgerDatabase,
  now: Date,
  retention: { entriesDays: number; resultsDays: number },
): Promise<string[]> {
  const dropped: string[] = [];
  const cutoffs = {
    ledger_entries: new Date(now.getTime() - retention.entriesDays * 86_400_000),
    ledger_results: new Date(now.getTime() - retention.resultsDays * 86_400_000),
  };
  for (const table of PARTITIONED_TABLES) {
    const partitions = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
       WHERE p.relname = $1`,
      [table],
    );
    for (const { name } of partitions) {
      const match = /_(\d{4})(\d{2})$/.exec(name);
      if (!match) continue;
      const end = monthStart(new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)), 1);
      if (end <= cutoffs[table]) {
        if (table === 'ledger_entries') {
          // Its entries leave the roll-ups in the transaction that drops them (ledger-rollups.ts).
          const start = boundOf(monthStart(end, -1));
          await db.transaction(async (tx) => {
            await subtractFromRollups(tx, start, boundOf(end));
            await tx.query(`DROP TABLE IF EXISTS ${name}`);
          });
        } else await db.query(`DROP TABLE IF EXISTS ${name}`);
        // The tracker's questions about those inquiries go with their entries (a few rows).
        if (table === 'ledger_entries') await db.query('DELETE FROM ledger_tracking WHERE created_at < $1', [end]);
        dropped.push(name);
      }
    }
  }
  return dropped;
}
