import type { AppConfig } from '../config/app-config.js';
import type { CallBudget } from '../token/authorized-upstream.js';

/** What the deadline rule reads of a record (inquiry-record.ts imports this file). */
interface DatedRecord {
  status: string;
  deadlineAt?: string;
  joined?: true;
}

/**
 * Past its deadline, a record still `pending` waits this much longer before it reads `unknown`:
 * room for clock skew between replicas and for the settlement's own write.
 */
export const DEADLINE_MARGIN_MS = 2_000;

/**
 * The time an inquiry's upstream work may take, from the moment its record is written: the
 * call and its one repeat after a 401, each with its handling type's timeout, plus waiting for a
 * token renewal (another replica's renewal lock, 2 timeouts + 2 s, then two GetToken calls of
 * our own). AuthorizedUpstream holds every call to the deadline this gives, so by construction
 * nothing of the inquiry is still running after it.
 */
export function inquiryBudget(
  upstream: Pick<AppConfig['upstream'], 'timeoutMs' | 'advancedTimeoutMs'>,
  handling: 'standard' | 'advanced',
  startedAt: number,
): CallBudget {
  const callTimeoutMs = handling === 'advanced' ? upstream.advancedTimeoutMs : upstream.timeoutMs;
  const tokenWaitMs = 4 * upstream.timeoutMs + 2_000;
  return { callTimeoutMs, deadline: startedAt + 2 * callTimeoutMs + tokenWaitMs };
}

/**
 * What a record says now: one still `pending` after its deadline and the margin belongs to an
 * upstream call that can no longer be running (its process died mid-call, or its settlement was
 * lost), so it reads `unknown`: possibly charged, never `pending` for ever (docs/api.md §2). A
 * waiter's (`joined`) reads `failed`: nothing was sent under it (inquiry-deadline.spec.ts).
 * Records written before deadlines existed carry none and read as stored.
 */
export function statusNow<R extends DatedRecord>(record: R, now = Date.now()): R['status'] | 'unknown' | 'failed' {
  if (record.status !== 'pending' || record.deadlineAt === undefined) return record.status;
  if (now <= Date.parse(record.deadlineAt) + DEADLINE_MARGIN_MS) return 'pending';
  // A waiter's record (`joined`) had no call under it: its replica died waiting, nothing charged.
  return record.joined ? 'failed' : 'unknown';
}

/** Milliseconds until a pending record reads `unknown` (0 once it does; Infinity without a deadline). */
export function msUntilOverdue(record: DatedRecord, now = Date.now()): number {
  if (record.deadlineAt === undefined) return Infinity;
  // The first millisecond at which statusNow reads `unknown` (it reads `pending` up to and including the margin's end).
  return Math.max(0, Date.parse(record.deadlineAt) + DEADLINE_MARGIN_MS + 1 - now);
}
