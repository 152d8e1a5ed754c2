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
      };
    });
  }
}
