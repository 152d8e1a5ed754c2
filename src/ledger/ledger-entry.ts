import type { ReservationRecord } from '../budget/budget.store.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

export type EntryKind = 'settled' | 'overdue' | 'reconciled';
export type Charged = 'yes' | 'no' | 'possibly';
export type EntryStatus = 'succeeded' | 'failed' | 'unknown';

/**
 * One ledger entry (docs/api.md §7): a fact about one inquiry. No personal data beyond the
 * end user's SHA-256; the upstream `data` travels beside it sealed and is stored apart.
 */
export interface LedgerEntry {
  trackId: string;
  kind: EntryKind;
  clientId: string;
  subjectSha256?: string;
  operation: InquiryOperation;
  requestHandlingType: RequestHandlingType;
  status: EntryStatus;
  charged: Charged;
  costUnits: number;
  /** ISO 8601. */
  createdAt: string;
  completedAt?: string;
  /** The upstream `meta.code`. */
  upstreamCode?: number;
  /** The upstream `meta.message` of the call (upstreamMessageOf: bounded, long digit runs masked). */
  upstreamMessage?: string;
  requestId?: string;
  /** A `reconciled` entry's place among the inquiry's resolutions: 1, then 2, 3, … for each correction. */
  revision?: number;
  /** What its budget reservation counted (docs/api.md §6); absent when no budget applied. */
  reservation?: ReservationRecord;
  /** The trackId of the answer a reused inquiry was answered with (docs/api.md §6). */
  reusedFrom?: string;
  /** What a reused inquiry would have cost at its own type and price then. */
  unitsSaved?: number;
  /**
   * What one cost unit cost when the inquiry was made (COST_UNIT_PRICE then: a decimal string
   * and an ISO 4217 code), recorded with it and copied to every later fact about it; money is
   * read from these. Absent: no price was configured then, or the entry predates migration 9.
   */
  unitPrice?: string;
  currency?: string;
  /** A `reconciled` entry's source (docs/api.md §8): the provider's list, or its tracking service. */
  resolvedBy?: 'reconciliation' | 'tracking';
}

export type { RecordedPrice } from '../config/budget-config.js';

/** An entry on its way to PostgreSQL, with the upstream `data` of a success. */
export interface QueuedEntry extends LedgerEntry {
  data?: unknown;
}

/**
 * A value PostgreSQL's `integer` column takes: a whole number within 32 bits. The upstream's
 * `meta.code` is any JSON number, and one the column refuses would fail its whole batch for ever.
 */
export function isInt4(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= -2_147_483_648 && (value as number) <= 2_147_483_647;
}

/** Longest upstream message kept: the provider's sentences are short; a page of text is not one. */
export const UPSTREAM_MESSAGE_MAX = 200;

/**
 * 8 or more digits of any script, each apart from the next by at most one space, dash or dot:
 * `0499-370899`, `0912 123 4567`, `۰۴۹-۹۳۷۰۸۹-۹` are one run, as a national code or a mobile is
 * written. A date (2026-11-24) is one too, and is masked with them: the price of keeping none.
 */
const DIGIT_RUN = /\p{Nd}(?:[\s.-]?\p{Nd}){7,}/gu;

/** Half a UTF-16 surrogate pair: PostgreSQL text refuses it, and the whole entry with it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The upstream's `meta.message` as the ledger keeps it (years): at most UPSTREAM_MESSAGE_MAX
 * characters, and the digits of any DIGIT_RUN masked (its separators kept), so that a message
 * echoing a national code, a mobile number or an IBAN's digits keeps none of them
 * (src/ledger/ledger-entry.spec.ts).
 */
export function upstreamMessageOf(message: unknown): string | undefined {
  if (typeof message !== 'string' || message.trim() === '') return undefined;
  return (
    message
      // Any script's digits: a message in Persian writes ۰۹۱۲…
      .replace(DIGIT_RUN, (run) => run.replace(/\p{Nd}/gu, '#'))
      // Control characters (a line break in a CSV cell, an escape sequence in a terminal) become spaces.
      .replace(/\p{Cc}/gu, ' ')
      .slice(0, UPSTREAM_MESSAGE_MAX)
      // The provider's own, or the cut's through a pair (an emoji at 200): U+FFFD, so the entry is
      // written, not parked (test/reconciliation.integration.spec.ts, 'writes a failed settlement
      // whose upstream message is cut at 200 characters inside a surrogate pair').
      .replace(LONE_SURROGATE, '\ufffd')
  );
}
