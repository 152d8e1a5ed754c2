import { Logger } from '@nestjs/common';
import { SEALED_PREFIX, type StoreCipher } from '../store/store-cipher.js';
import type { LedgerDatabase, SqlQueries } from './ledger-database.js';
import type { EntryStatus, LedgerEntry, QueuedEntry } from './ledger-entry.js';
import { ENTRY_COLUMNS, entryRow, toEntry, type EntryRow } from './ledger-rows.js';
import { ensureRollupZones } from './ledger-rollups.js';
import { ensurePartitions, migrate } from './ledger-schema.js';
import { isMissingPartition } from './entry-writer.js';

export { ENTRY_FIELDS, LATEST_FIRST } from './ledger-rows.js';

/** Where the results' AAD binds a sealed `data`: its trackId (a copy to another row does not open). */
export function resultContext(trackId: string): string {
  return `ledger:result:${trackId}`;
}

/** Keyset position of an export: the last row's (created_at, track_id, kind, revision). */
export interface ExportCursor {
  createdAt: Date;
  trackId: string;
  kind: string;
  revision: number;
}

export interface ExportFilter {
  from: Date;
  to: Date;
  clientId?: string;
  status?: EntryStatus;
  /** One inquiry's entries (the console's lookup): its primary key narrows each partition to a few rows. */
  trackId?: string;
}

/** The current state of one inquiry from its entries: the latest fact wins. */
export interface InquiryFacts {
  entries: LedgerEntry[];
  /** The sealed upstream data, while the result retention keeps it. */
  data?: unknown;
}

/** Rows per keyset page: a page is a few MiB at most, whatever the export's size. */
export const PAGE_ROWS = 5_000;

/**
 * The ledger's reads and writes in PostgreSQL (or PGlite, same SQL). Writes are INSERTs only,
 * `ON CONFLICT DO NOTHING`: the same entry written twice (two drainers, a redelivery) is one row.
 */
export class LedgerStore {
  private readonly logger = new Logger('LedgerStore');
  private migrated: Promise<unknown> | null = null;
  private migratedGeneration = 0;
  private unopenableReported = false;

  constructor(
    readonly db: LedgerDatabase,
    private readonly cipher: StoreCipher,
    private readonly resultRetentionDays: number,
    /** Time zones to keep daily roll-ups in besides UTC (BUDGET_TIMEZONE), back-filled once when new. */
    private readonly rollupZones: readonly string[] = [],
  ) {}

  /**
   * The schema, migrated once per database before the first statement (again after a failure,
   * and after the embedded ledger's worker was re-created: in `memory://` it starts empty).
   */
  ready(): Promise<unknown> {
    if (this.migratedGeneration !== this.db.generation) this.migrated = null;
    if (!this.migrated) {
      this.migratedGeneration = this.db.generation;
      this.migrated = migrate(this.db)
        .then(async (applied) => (await ensureRollupZones(this.db, this.rollupZones), applied))
        .catch((error: unknown) => {
          this.migrated = null;
          throw error;
        });
    }
    return this.migrated;
  }

  /** Inserts a batch in two statements (entries, then results); returns the entries newly written. */
  async insert(entries: readonly QueuedEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    await this.ready();
    try {
      return await this.insertOnce(entries);
    } catch (error) {
      // No partition for a row's month (a fresh database, or a backlog across months); a
      // CHECK's 23514 (it names its constraint) is the data's, and a retry would not help.
      if (!isMissingPartition(error)) throw error;
      await ensurePartitions(
        this.db,
        entries.map((entry) => new Date(entry.createdAt)),
      );
      return this.insertOnce(entries);
    }
  }

  /**
   * Entries written inside a transaction of the caller's (a parked entry re-driven with the
   * fact that says who did it: parked-actions.ts); the caller awaited ready() and made their
   * months' partitions beforehand (never from inside: on PGlite a statement outside the
   * transaction waits for it to end, and migrating is one).
   */
  insertWithin(tx: SqlQueries, entries: readonly QueuedEntry[]): Promise<number> {
    return this.insertOnce(entries, tx);
  }

  /**
   * One parameter per statement, the batch as JSON (json_to_recordset): the server parses it,
   * rather than the client escaping thirteen arrays (half the drainer's CPU per entry, measured:
   * docs/performance.md, "Ledger").
   */
  private async insertOnce(entries: readonly QueuedEntry[], db: SqlQueries = this.db): Promise<number> {
    const rows = await db.query<{ n: number }>(
      `WITH written AS (
         INSERT INTO ledger_entries (track_id, kind, client_id, subject_sha256, operation, request_handling_type,
           status, charged, cost_units, created_at, completed_at, upstream_code, upstream_message, request_id, revision,
           reserved_units, reserved_budgets, reserved_daily, reserved_monthly, reused_from, units_saved,
           unit_price, currency, resolved_by)
         SELECT "trackId", kind, "clientId", "subjectSha256", operation, "requestHandlingType", status, charged,
           "costUnits", "createdAt", "completedAt", "upstreamCode", "upstreamMessage", "requestId",
           coalesce(revision, CASE kind WHEN 'reconciled' THEN 1 ELSE 0 END),
           (reservation->>'units')::int,
           CASE WHEN reservation IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(reservation->'budgets')) END,
           reservation->>'daily', reservation->>'monthly', "reusedFrom", "unitsSaved", "unitPrice", currency,
           CASE WHEN kind = 'reconciled' THEN coalesce("resolvedBy", 'reconciliation') END
         FROM json_to_recordset($1::json) AS x("trackId" uuid, kind text, "clientId" text, "subjectSha256" text,
           operation text, "requestHandlingType" text, status text, charged text, "costUnits" int,
           "createdAt" timestamptz, "completedAt" timestamptz, "upstreamCode" int, "upstreamMessage" text, "requestId" text, revision int, reservation json,
           "reusedFrom" uuid, "unitsSaved" int, "unitPrice" numeric, currency text, "resolvedBy" text)
         ON CONFLICT DO NOTHING RETURNING 1)
       SELECT count(*)::int AS n FROM written`,
      [JSON.stringify(entries.map(entryRow))],
    );
    // Sealed or not kept (docs/api.md §6): without a key ring no result reaches the database
    // (test/ledger-privacy.e2e.spec.ts reads the raw rows).
    if (!this.cipher.enabled) return rows[0]?.n ?? 0;
    const since = Date.now() - this.resultRetentionMs();
    const results: Array<{ t: string; c: string; s: string }> = [];
    for (const entry of entries) {
      if (entry.data === undefined || Date.parse(entry.createdAt) <= since) continue;
      results.push({
        t: entry.trackId,
        c: entry.createdAt,
        s: this.cipher.seal(JSON.stringify(entry.data), resultContext(entry.trackId)),
      });
    }
    if (results.length > 0) {
      await db.query(
        `INSERT INTO ledger_results (track_id, created_at, sealed_data)
         SELECT t, c, s FROM json_to_recordset($1::json) AS x(t uuid, c timestamptz, s text) ON CONFLICT DO NOTHING`,
        [JSON.stringify(results)],
      );
    }
    return rows[0]?.n ?? 0;
  }

  private resultRetentionMs(): number {
    return this.resultRetentionDays * 86_400_000;
  }

  /**
   * Every entry of one inquiry, weakest fact first (overdue < settled < reconciled by revision,
   * then recorded_at: the rank usage uses), and its data while kept; null when unknown. Not write
   * order: two drainers may record a settlement before the overdue entry (docs/api.md §7).
   */
  async facts(trackId: string): Promise<InquiryFacts | null> {
    await this.ready();
    const rows = await this.db.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE track_id = $1
       ORDER BY CASE kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END, revision, recorded_at`,
      [trackId],
    );
    if (rows.length === 0) return null;
    const entries = rows.map(toEntry);
    // Without a key ring no result opens: not even asked for.
    if (!this.cipher.enabled) return { entries };
    const since = new Date(Date.now() - this.resultRetentionMs());
    const results = await this.db.query<{ sealed_data: string }>(
      'SELECT sealed_data FROM ledger_results WHERE track_id = $1 AND created_at >= $2',
      [trackId, since],
    );
    // Kept only sealed: a value in clear (written before that rule; migration 5 deletes them) is never served.
    if (results.length === 0 || !results[0].sealed_data.startsWith(SEALED_PREFIX)) return { entries };
    const opened = this.cipher.openOrUndefined(results[0].sealed_data, resultContext(trackId));
    if (opened === undefined) {
      // Its key left the ring before the result retention ended, or the row was altered: the
      // facts still answer (a 503 would last until retention drops the row), said once
      // (test/ledger-store.integration.spec.ts).
      this.reportUnopenable();
      return { entries };
    }
    return { entries, data: JSON.parse(opened) };
  }

  private reportUnopenable(): void {
    if (this.unopenableReported) return;
    this.unopenableReported = true;
    this.logger.error(
      'a ledger result cannot be opened (sealed under a key no longer in STORE_ENCRYPTION_KEYS, or altered): ' +
        'inquiries are answered without their data; said once',
    );
  }

  /**
   * One keyset page of an export, in (created_at, track_id, kind, revision) order: the same SQL on
   * PostgreSQL and PGlite, no server cursor, memory bounded by the page (PAGE_ROWS).
   */
  async page(filter: ExportFilter, after?: ExportCursor, limit = PAGE_ROWS): Promise<LedgerEntry[]> {
    await this.ready();
    const rows = await this.db.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
       WHERE created_at >= $1 AND created_at < $2
         AND ($3::text IS NULL OR client_id = $3) AND ($4::text IS NULL OR status = $4)
         AND ($5::timestamptz IS NULL OR (created_at, track_id, kind, revision) > ($5, $6::uuid, $7, $10::int))
         AND ($9::uuid IS NULL OR track_id = $9)
       ORDER BY created_at, track_id, kind, revision LIMIT $8`,
      [
        filter.from,
        filter.to,
        filter.clientId ?? null,
        filter.status ?? null,
        after?.createdAt ?? null,
        after?.trackId ?? null,
        after?.kind ?? null,
        limit,
        filter.trackId ?? null,
        after?.revision ?? 0,
      ],
    );
    return rows.map(toEntry);
  }

  /** Every entry of the filter, page by page: an async iterator that holds one page at a time. */
  async *entries(filter: ExportFilter): AsyncGenerator<LedgerEntry> {
    let after: ExportCursor | undefined;
    for (;;) {
      const page = await this.page(filter, after);
      yield* page;
      if (page.length < PAGE_ROWS) return;
      const last = page[page.length - 1];
      after = {
        createdAt: new Date(last.createdAt),
        trackId: last.trackId,
        kind: last.kind,
        revision: last.revision ?? 0,
      };
    }
  }
}
