import { Injectable } from '@nestjs/common';
import { LedgerCalls } from './ledger-call.js';
import type { EntryStatus } from './ledger-entry.js';
import { LedgerStore } from './ledger.store.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/** An inquiry as the ledger knows it, in the record's shape (inquiry/inquiry-record.ts). */
export interface LedgerInquiry {
  trackId: string;
  clientId: string;
  subjectSha256?: string;
  operation: InquiryOperation;
  requestHandlingType: RequestHandlingType;
  fingerprint: string;
  status: EntryStatus;
  createdAt: string;
  completedAt?: string;
  upstream?: { code?: number; message?: string };
  data?: unknown;
  /** A reused inquiry's source (docs/api.md §2), and whether another client paid for it (then not shown). */
  reusedFrom?: string;
  reusedFromHidden?: boolean;
  /** Its latest fact a resolution: who learned it (docs/api.md §8). */
  resolvedBy?: 'reconciliation' | 'tracking';
}

/**
 * `GET /v1/inquiries/{trackId}` once the Redis record is gone (docs/api.md §2, §6): the
 * inquiry from its entries, the latest fact deciding its status; `data` only while the result
 * retention keeps it.
 */
@Injectable()
export class LedgerReads {
  private readonly ledger = new LedgerCalls();

  constructor(private readonly store: LedgerStore) {}

  /** Null when the ledger has no entry for it; a 503 store_unavailable when PostgreSQL is down. */
  inquiry(trackId: string): Promise<LedgerInquiry | null> {
    return this.ledger.run('ledger read', async () => {
      const facts = await this.store.facts(trackId);
      if (!facts) return null;
      // Entries come weakest fact first: the last decides the status; completedAt and the
      // upstream's code come from the strongest fact of the call itself (a settlement over an
      // overdue entry), never from a reconciliation, which copies them.
      const latest = facts.entries[facts.entries.length - 1];
      const first = facts.entries.findLast((entry) => entry.kind !== 'reconciled') ?? latest;
      return {
        trackId: first.trackId,
        clientId: first.clientId,
        ...(first.subjectSha256 ? { subjectSha256: first.subjectSha256 } : {}),
        operation: first.operation,
        requestHandlingType: first.requestHandlingType,
        // Not kept in the ledger: an idempotency fingerprint outlives no record.
        fingerprint: '',
        status: latest.status,
        createdAt: first.createdAt,
        ...(first.completedAt ? { completedAt: first.completedAt } : {}),
        ...(first.upstreamCode !== undefined
          ? {
              upstream: {
                code: first.upstreamCode,
                ...(first.upstreamMessage !== undefined ? { message: first.upstreamMessage } : {}),
              },
            }
          : {}),
        ...(facts.data !== undefined ? { data: facts.data } : {}),
        ...(latest.resolvedBy !== undefined ? { resolvedBy: latest.resolvedBy } : {}),
        ...(first.reusedFrom !== undefined
          ? {
              reusedFrom: first.reusedFrom,
              ...((await this.clientOf(first.reusedFrom)) !== first.clientId ? { reusedFromHidden: true } : {}),
            }
          : {}),
      };
    });
  }

  /**
   * The client whose inquiry a reused answer came from: under `company` sharing, `reusedFrom`
   * is shown only to callers of that same client (docs/api.md §2, "Partitions"). Unknown (gone
   * with the ledger retention) counts as another client's.
   */
  private async clientOf(trackId: string): Promise<string | undefined> {
    const rows = await this.store.db.query<{ client_id: string }>(
      'SELECT client_id FROM ledger_entries WHERE track_id = $1 LIMIT 1',
      [trackId],
    );
    return rows[0]?.client_id;
  }
}
