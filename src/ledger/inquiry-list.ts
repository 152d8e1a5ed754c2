import type { Charged, EntryStatus, LedgerEntry } from './ledger-entry.js';
import { ledgerDate } from './ledger-dates.js';
import { ENTRY_COLUMNS, FACT_RANK, REUSED_ANSWER, toEntry, type EntryRow } from './ledger-rows.js';
import type { LedgerStore } from './ledger.store.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/** The list's filter (docs/api.md §7, `GET /admin/inquiries`): each inquiry judged by its latest fact. */
export interface InquiryFilter {
  from: Date;
  to: Date;
  clientId?: string;
  operation?: InquiryOperation;
  handling?: RequestHandlingType;
  status?: EntryStatus;
  charged?: Charged;
  /** A reused answer that bought nothing (ledger-rows.ts, REUSED_ANSWER); not a stale answer served after an attempt. */
  reused?: boolean;
}

/** Where a page ends: its last inquiry's (createdAt, trackId), the list's order. */
export interface ListCursor {
  createdAt: string;
  trackId: string;
}

export interface InquiryPage {
  /** The latest fact of each inquiry, newest first. */
  inquiries: LedgerEntry[];
  /** The cursor of the next page; absent on the last one. */
  next?: ListCursor;
}

/** Rows a page of the list may hold. */
export const MAX_LIST_ROWS = 500;

/**
 * The inquiries of a period, newest first, one row per inquiry (its latest fact: a
 * reconciliation over a settlement over an overdue entry), paged by keyset on
 * (created_at, track_id): the index ledger_entries_created read backwards, partitions in
 * order, no OFFSET, so a page costs the same at the millionth row as at the first
 * (bench/console-load.ts measures it). The filters on the inquiry's fixed fields (client,
 * operation, handling) narrow the scan; status, charged and reused judge the latest fact.
 */
export class InquiryList {
  constructor(private readonly store: LedgerStore) {}

  async page(filter: InquiryFilter, after: ListCursor | undefined, limit: number): Promise<InquiryPage> {
    await this.store.ready();
    // One row per inquiry: an entry stands when no fact of the same inquiry ranks above it (the
    // primary key answers that, one probe per row), so the rows come in the order of the index
    // ledger_entries_created read backwards and the LIMIT stops the scan: no sort of the period.
    const rows = await this.store.db.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ledger_entries e
       WHERE e.created_at >= $1 AND e.created_at < $2
         AND ($3::timestamptz IS NULL OR (e.created_at, e.track_id) < ($3, $4::uuid))
         AND ($5::text IS NULL OR e.client_id = $5)
         AND ($6::text IS NULL OR e.operation = $6)
         AND ($7::text IS NULL OR e.request_handling_type = $7)
         AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.track_id = e.track_id
           AND l.created_at = e.created_at AND ${FACT_RANK('l')} > ${FACT_RANK('e')})
         AND ($8::text IS NULL OR e.status = $8) AND ($9::text IS NULL OR e.charged = $9) AND ($11::boolean IS NULL OR ${REUSED_ANSWER('e')} = $11)
       ORDER BY e.created_at DESC, e.track_id DESC
       LIMIT $10`,
      [
        filter.from,
        filter.to,
        after?.createdAt ?? null,
        after?.trackId ?? null,
        filter.clientId ?? null,
        filter.operation ?? null,
        filter.handling ?? null,
        filter.status ?? null,
        filter.charged ?? null,
        limit + 1,
        filter.reused ?? null,
      ],
    );
    const inquiries = rows.slice(0, limit).map(toEntry);
    const last = inquiries[inquiries.length - 1];
    return rows.length > limit
      ? { inquiries, next: { createdAt: last.createdAt, trackId: last.trackId } }
      : { inquiries };
  }

  /** Every inquiry of the filter, a page at a time (the export's `latest=true`): memory holds one page. */
  async *all(filter: InquiryFilter): AsyncGenerator<LedgerEntry> {
    let after: ListCursor | undefined;
    do {
      const page = await this.page(filter, after, MAX_LIST_ROWS * 10);
      yield* page.inquiries;
      after = page.next;
    } while (after);
  }
}

/** The cursor as the client holds it: opaque (base64url of JSON), checked when read back. */
export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.trackId])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Undefined when the text is not a cursor this list wrote. */
export function decodeCursor(text: string): ListCursor | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2) return undefined;
    const [createdAt, trackId] = value as unknown[];
    if (typeof createdAt !== 'string' || typeof trackId !== 'string' || !UUID.test(trackId)) return undefined;
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(createdAt)) return undefined;
    // The administration routes' date rule (throws on 2026-02-30 or year 0): the database
    // never sees a date it would refuse (test/console-reads.integration.spec.ts, 'refuses a forged cursor').
    ledgerDate('after', createdAt);
    return { createdAt, trackId };
  } catch {
    return undefined;
  }
}
