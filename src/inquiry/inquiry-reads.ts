import { Injectable } from '@nestjs/common';
import type { Caller } from '../caller-auth/caller.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { LedgerReads } from '../ledger/ledger-reads.js';
import { ProblemException } from '../problem/problem.js';
import { msUntilOverdue, statusNow } from './inquiry-deadline.js';
import { publicView, type InquiryRecord } from './inquiry-record.js';
import { InquiryStore } from './inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';

/** `GET /v1/inquiries/{trackId}`: the record as the caller may see it, and how long it was waited for. */
export interface InquiryView {
  view: ReturnType<typeof publicView>;
  /** Seconds of `Prefer: wait` applied (the answer was held), for `Preference-Applied`. */
  waitedSeconds?: number;
}

/** How early a timer may fire by Date.now(); a wait that ended sooner than this before its time was cut short. */
const EARLY_TIMER_MS = 50;
/**
 * How long an `unknown` record waits for the ledger's resolution over it: a stalled ledger
 * leaves the record answering as it stands (test/tracking.e2e.spec.ts, 'answers from the
 * record within a bound').
 */
const RESOLUTION_READ_MS = 1_000;

/**
 * `GET /v1/inquiries/{trackId}`, with its long-poll (`Prefer: wait`). Only the client that made
 * the inquiry sees it, and for an app's end user (JWT `sub`) only that user, so one user does not
 * see another's IBAN owners (test/jwt-callers.e2e.spec.ts, 'accepts a valid token verified by
 * %s, with scopes from `scope`').
 */
@Injectable()
export class InquiryReads {
  constructor(
    private readonly records: InquiryStore,
    private readonly ledgerReads: LedgerReads,
    private readonly waits: InquiryWaits,
    /** End users' pseudonyms, keyed (crypto/subject-hash.ts). */
    private readonly subjects: SubjectHasher,
  ) {}

  /**
   * With `waitMs`, a `pending` record is waited for (woken by its settlement on any replica)
   * until it settles, the wait ends, or it is overdue and reads `unknown`; `gone` (the caller
   * hung up) ends the wait and frees its slot (test/keyed-async-retry.e2e.spec.ts, 'frees its
   * slot at once, not at the end of its wait').
   */
  async find(caller: Caller, trackId: string, waitMs = 0, gone?: AbortSignal): Promise<InquiryView> {
    if (!/^[0-9a-f-]{36}$/i.test(trackId)) throw notFound();
    const id = trackId.toLowerCase();
    // Held before the first read, so a settlement between the read and the wait still wakes it.
    const wait = waitMs > 0 ? await this.waits.hold(id) : undefined;
    try {
      // Once the Redis record has expired, the ledger answers for years (docs/api.md §6).
      let record = this.visible(caller, await this.current(id));
      if (waitMs <= 0 || statusNow(record) !== 'pending') return { view: publicView(record) };
      if (!wait) throw this.waits.refusal();
      const started = Date.now();
      let left = Math.min(waitMs, msUntilOverdue(record));
      // Rounds, not one wait: a timer may fire a few ms before Date.now() reaches its time
      // (libuv's loop clock), and a record read then is not yet overdue. Each round waits for
      // what is left; a settlement, a hang-up, the end of the caller's wait, or a round cut
      // short (shutdown: held waits end at once) ends it (inquiry-reads.spec.ts).
      while (left > 0) {
        const roundStarted = Date.now();
        const woken = await wait.until(left, gone);
        record = this.visible(caller, await this.records.get(id));
        if (woken || gone?.aborted || statusNow(record) !== 'pending') break;
        // Cut short: it ended well before its time (for a short round, before half of it).
        if (Date.now() - roundStarted < Math.max(left - EARLY_TIMER_MS, left / 2)) break;
        left = Math.min(started + waitMs - Date.now(), msUntilOverdue(record));
      }
      return { view: publicView(record), waitedSeconds: Math.round((Date.now() - started) / 1000) };
    } finally {
      wait?.release();
    }
  }

  /**
   * The Redis record, or the ledger's once it is gone. An `unknown` record may have been resolved
   * since by the provider's tracking service or list (docs/api.md §8): the ledger's resolution is
   * read over it; the ledger unreachable or slower than RESOLUTION_READ_MS, the record answers
   * as it stands.
   */
  private async current(id: string): Promise<InquiryRecord | null> {
    const record = await this.records.get(id);
    if (record === null) return this.ledgerReads.inquiry(id);
    if (statusNow(record) !== 'unknown') return record;
    const resolved = await this.withinBound(this.ledgerReads.inquiry(id));
    if (resolved?.resolvedBy === undefined || resolved.clientId !== record.clientId) return record;
    return { ...record, status: resolved.status, resolvedBy: resolved.resolvedBy };
  }

  /** The ledger's answer, or null once it failed or RESOLUTION_READ_MS passed. */
  private async withinBound<T>(read: Promise<T>): Promise<T | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), RESOLUTION_READ_MS)));
    try {
      return await Promise.race([read.catch(() => null), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private visible(caller: Caller, record: InquiryRecord | null): InquiryRecord {
    const visible =
      record !== null &&
      record.clientId === caller.clientId &&
      (caller.subject === undefined || this.subjects.matches(caller.subject, record.subjectSha256));
    if (!visible) throw notFound();
    return record;
  }
}

function notFound(): ProblemException {
  return new ProblemException('not_found', 'No inquiry with this trackId.');
}
