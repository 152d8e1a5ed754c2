import { Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { RefusalCount, RefusalTally } from '../caller-auth/refusal-tally.js';

/** The flush interval's bounds: whatever is configured, a flush every 1 to 60 s. */
export const REFUSAL_FLUSH_MS = { min: 1_000, max: 60_000 } as const;
/** The shutdown step's bound, as the owed settlements' and the ledger queue's flushes. */
export const REFUSAL_SHUTDOWN_FLUSH_MS = 5_000;

/**
 * Writes this replica's RefusalTally to `ledger_refusals` (issue 35): every `intervalMs`
 * (clamped to 1-60 s), early when the tally nears its cap, and once at shutdown (the shutdown
 * step 'flush refusal counts', before the ledger's database closes). A failed write gives the
 * counts back to the tally (within its cap) and is logged once per streak, by its error code
 * only; until a write succeeds again the next try is the next timed flush, never an early one
 * (the counts given back may be past the near-full mark: each failure would call the next).
 *
 * Known limits (observability counts, not money; the ledger's money entries are untouched): a
 * replica killed between flushes loses at most one interval of its refusal counts; the shutdown
 * flush waits at most REFUSAL_SHUTDOWN_FLUSH_MS, what it has not written by then is lost (one log
 * line with the count); a commit whose outcome is unknown (connection lost at COMMIT) is given
 * back and may count twice. Unit specs: src/ledger/refusal-flusher.spec.ts.
 */
export class RefusalFlusher implements OnApplicationBootstrap {
  private readonly logger = new Logger('RefusalFlusher');
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  /** The counts of the write in progress, if any: lost if shutdown gives up on it. */
  private writing: readonly RefusalCount[] = [];
  private failing = false;
  /** An early flush is queued and has not taken the tally yet: at most one is. */
  private earlyPending = false;
  private stopped = false;
  /** stop() is done: the database closes next, so nothing more is written. */
  private closed = false;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly tally: RefusalTally,
    private readonly write: (counts: readonly RefusalCount[]) => Promise<void>,
    intervalMs: number,
  ) {
    this.intervalMs = Math.min(REFUSAL_FLUSH_MS.max, Math.max(REFUSAL_FLUSH_MS.min, intervalMs || 0));
  }

  onApplicationBootstrap(): void {
    this.tally.onNearFull(() => this.flushEarly());
    this.schedule();
  }

  /**
   * Takes what the tally holds and writes it; one flush at a time (a second waits for the
   * first, then takes what came meanwhile). Resolves when done, whether written or given back.
   */
  flush(): Promise<void> {
    this.running = this.running.then(() => this.flushNow());
    return this.running;
  }

  /**
   * The shutdown step: no more timed or early flushes, the one running awaited, then a last one,
   * all within REFUSAL_SHUTDOWN_FLUSH_MS (src/ledger/refusal-flusher.spec.ts, "stop() ends within
   * a bound"); nothing is written once it has resolved. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopWithin(REFUSAL_SHUTDOWN_FLUSH_MS);
    return this.stopping;
  }

  private async stopWithin(ms: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let bound: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => (bound = setTimeout(() => resolve(true), ms)));
    const expired = await Promise.race([this.flush().then(() => false), timedOut]);
    clearTimeout(bound);
    this.closed = true;
    // Given back by a failed last write, or still in a write given up on.
    const lost = [...this.tally.take(), ...(expired ? this.writing : [])].reduce((sum, c) => sum + c.count, 0);
    if (lost > 0)
      this.logger.error(
        `${lost} refusal count(s) not written at shutdown (${expired ? `no answer within ${ms} ms` : 'the write failed'}): lost`,
      );
  }

  /** Near full: one flush queued at once, unless one is already, the last failed, or shutdown began. */
  private flushEarly(): void {
    if (this.stopped || this.failing || this.earlyPending) return;
    this.earlyPending = true;
    void this.flush();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.flush().then(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  private async flushNow(): Promise<void> {
    this.earlyPending = false;
    if (this.closed) return;
    const counts = this.tally.take();
    if (counts.length === 0) return;
    this.writing = counts;
    try {
      await this.write(counts);
      if (this.failing) this.logger.log('refusal counts written again');
      this.failing = false;
    } catch (error) {
      // Given up on at shutdown: already counted as lost.
      if (this.closed) return;
      this.tally.giveBack(counts);
      // Once per streak, by its code or name: a driver's message may quote a URL or a value.
      if (!this.failing) this.logger.warn(`refusal counts kept for the next flush: ${codeOf(error)}`);
      this.failing = true;
    } finally {
      this.writing = [];
    }
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,32}$/i.test(code)) return code;
  return error instanceof Error ? error.name : 'unknown error';
}
