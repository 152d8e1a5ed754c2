import { Logger } from '@nestjs/common';
import { ProblemException } from '../problem/problem.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';

/**
 * The ledger's database (PostgreSQL or PGlite) failed a read or a reconciliation: 503
 * `store_unavailable` (docs/api.md §3), with a detail of its own. Not StoreUnavailableError,
 * whose detail ("nothing was sent to the verification service") is about refusing an inquiry
 * and is beside the point here (issue 33).
 */
export class LedgerUnavailableError extends ProblemException {
  constructor(operation: string, cause: unknown) {
    super(
      'store_unavailable',
      `The ledger could not complete the ${operation.replace(/^ledger /, '')}; try again later.`,
      {
        headers: { [RETRY_AFTER_HEADER]: '1' },
      },
    );
    this.message = `ledger unavailable during ${operation}`;
    this.name = 'LedgerUnavailableError';
    this.cause = cause;
  }
}

/** A line logged in the last QUIET_MS is not repeated: an outage under reads logs once per spell. */
const QUIET_MS = 10_000;

/**
 * What failed, for the operator, without the values a database message may quote (a date, a
 * trackId, a field): quoted text and long digit runs are cut. The SQLSTATE (or the socket's
 * errno code) names the failure.
 */
export function describeLedgerFailure(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = (typeof message === 'string' ? message : String(error))
    .replace(/"[^"]*"/g, '"…"')
    .replace(/'[^']*'/g, "'…'")
    .replace(/\d{6,}/g, '…')
    .slice(0, 200);
  return typeof code === 'string' ? `${code}: ${text}` : text;
}

/**
 * Runs reads of the ledger (or reconciliations) for an answer: the database unreachable or
 * refusing the statement is the caller's 503 (LedgerUnavailableError) and is logged here with
 * its code; a problem the code raised passes as it is, and the gateway's own bugs (TypeError and
 * kin) stay what they are, as storeCall does for Redis. One per consumer (AdminController,
 * LedgerReads), each with its own log throttle: a line one gateway logged never silences
 * another's in the same process (ledger-call.spec.ts).
 */
export class LedgerCalls {
  private readonly logger = new Logger('Ledger');
  private readonly lastLogged = new Map<string, number>();

  async run<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ProblemException) throw error;
      if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) throw error;
      const line = `${operation} failed: ${describeLedgerFailure(error)}`;
      const now = Date.now();
      if ((this.lastLogged.get(line) ?? 0) + QUIET_MS <= now) {
        if (this.lastLogged.size > 100) this.lastLogged.clear();
        this.lastLogged.set(line, now);
        this.logger.error(line);
      }
      throw new LedgerUnavailableError(operation, error);
    }
  }
}
