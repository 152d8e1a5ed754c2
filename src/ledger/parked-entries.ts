import { createHash } from 'node:crypto';
import type { EntryParking, Refusal } from './entry-writer.js';
import type { QueuedEntry } from './ledger-entry.js';
import type { LedgerStore } from './ledger.store.js';
import type { ParkedActionFact } from './parked-actions.js';

/** One parked entry as GET /admin/ledger/parked shows it (docs/runbooks.md, LedgerEntriesParked). */
export interface ParkedRow {
  /** The entry's SHA-256: what POST /admin/ledger/parked/{id}/redrive and …/discard name. */
  id: string;
  trackId: string | null;
  kind: string | null;
  requestId: string | null;
  /** The database's SQLSTATE (22007 for a date the gateway refused before it). */
  code: string;
  message: string;
  parkedAt: string;
  /** The entry as the queue held it, JSON text: lone surrogates, controls (C0, DEL, C1) and U+2028/U+2029 as \u escapes. */
  entry: string;
  /** What an operator did with it (parked-actions.ts); null while it waits for a decision. */
  handled: Omit<ParkedActionFact, 'id' | 'replayed'> | null;
}

/** Rows per answer: parking is rare, and a flood of it is read by narrowing from/to. */
export const PARKED_ROWS = 1_000;

/** Longest id or message kept in its own column (the entry keeps the whole value). */
const MAX_TEXT = 1_000;

/** C0/C1 controls and lone UTF-16 surrogates: what PostgreSQL text refuses or a log line should not carry. */
const UNSTORABLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `value` as storable, printable text (unstorable characters as \uXXXX, cut at 1000), or null when not a string. */
export function storableText(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const escaped = value.replace(UNSTORABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length > MAX_TEXT ? `${escaped.slice(0, MAX_TEXT)}…` : escaped;
}

/** What JSON.stringify leaves raw that a terminal or a log viewer takes for a control or a line end. */
const RAW_IN_JSON = /[\u007f-\u009f\u2028\u2029]/g;

/**
 * JSON text with DEL, C1 controls and U+2028/U+2029 as \u escapes: the same JSON (they occur
 * only inside its strings, never after a backslash), printable as the parked view promises.
 */
export function printableJson(json: string): string {
  return json.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The ledger's parked entries (table ledger_parked, migration 4): written by EntryWriter, read by operators. */
export class ParkedEntries implements EntryParking {
  constructor(private readonly store: LedgerStore) {}

  /**
   * Parks one refused entry, once (by its digest). The upstream `data` stays out: it is kept
   * only sealed, in ledger_results, and a parked entry has none there.
   */
  async park(entry: QueuedEntry, refusal: Refusal): Promise<void> {
    await this.store.ready();
    const { data: _data, ...fields } = entry;
    // Well-formed JSON.stringify: a lone surrogate or a NUL comes out as a \u escape, so the
    // bytes are valid UTF-8 whatever the entry holds.
    const bytes = Buffer.from(JSON.stringify(fields), 'utf8');
    await this.store.db.query(
      `INSERT INTO ledger_parked (entry_sha256, track_id, kind, request_id, entry, error_code, error_message)
       VALUES ($1, $2, $3, $4, decode($5, 'base64'), $6, $7) ON CONFLICT (entry_sha256) DO NOTHING`,
      [
        createHash('sha256').update(bytes).digest('hex'),
        storableText(entry.trackId),
        storableText(entry.kind),
        storableText(entry.requestId),
        bytes.toString('base64'),
        storableText(refusal.code) ?? 'unknown',
        storableText(refusal.message) ?? '',
      ],
    );
  }

  /** Entries parked in [from, to), oldest first, at most PARKED_ROWS; `truncated` when there are more. */
  async list(from: Date, to: Date): Promise<{ parked: ParkedRow[]; truncated: boolean }> {
    await this.store.ready();
    const rows = await this.store.db.query<{
      entry_sha256: string;
      action: ParkedActionFact['action'] | null;
      client_id: string | null;
      reason: string | null;
      written: boolean | null;
      acted_at: Date | null;
      track_id: string | null;
      kind: string | null;
      request_id: string | null;
      error_code: string;
      error_message: string;
      parked_at: Date;
      entry: Uint8Array;
    }>(
      `SELECT p.entry_sha256, track_id, kind, p.request_id, error_code, error_message, parked_at, entry,
         a.action, a.client_id, a.reason, a.written, a.acted_at
       FROM ledger_parked p LEFT JOIN ledger_parked_actions a USING (entry_sha256)
       WHERE parked_at >= $1 AND parked_at < $2 ORDER BY parked_at, p.entry_sha256 LIMIT $3`,
      [from, to, PARKED_ROWS + 1],
    );
    return {
      parked: rows.slice(0, PARKED_ROWS).map((row) => ({
        id: row.entry_sha256,
        trackId: row.track_id,
        kind: row.kind,
        requestId: row.request_id,
        code: row.error_code,
        message: row.error_message,
        parkedAt: new Date(row.parked_at).toISOString(),
        entry: printableJson(Buffer.from(row.entry).toString('utf8')),
        handled:
          row.action === null
            ? null
            : {
                action: row.action,
                by: row.client_id ?? '',
                reason: row.reason ?? '',
                at: new Date(row.acted_at ?? 0).toISOString(),
                ...(row.written !== null ? { written: row.written } : {}),
              },
      })),
      truncated: rows.length > PARKED_ROWS,
    };
  }
}
