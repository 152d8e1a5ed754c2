import { Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { RefusalCount, RefusalTally } from '../caller-auth/refusal-tally.js';

/** The flush interval's bounds: whatever is configured, a flush every 1 to 60 s. */
export const REFUSAL_FLUSH_MS = { min: 1_000, max: 60_000 } as const;

/**
 * Writes this replica's RefusalTally to `ledger_refusals` (issue 35): every `intervalMs`
 * (clamped to 1-60 s), early when the tally nears its cap, and once at shutdown (the shutdown
 * step 'flush refusal counts', before the ledger's database closes). A failed write gives the
 * counts back to the tally (within its cap) for the next flush, and is logged once per streak,
 * by its error code only.
 *
 * Known limits (observability counts, not money; the ledger's money entries are untouched): a
 * replica killed between flushes loses at most one interval of its refusal counts; a commit
 * whose outcome is unknown (connection lost at COMMIT) is given back and may count twice.
 * Unit specs: src/ledger/refusal-flusher.spec.ts.
 */
export class RefusalFlusher implements OnApplicationBootstrap {
  private readonly logger = new Logger('RefusalFlusher');
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private failing = false;
  private stopped = false;

  constructor(
    private readonly tally: RefusalTally,
    private readonly write: (counts: readonly RefusalCount[]) => Promise<void>,
    intervalMs: number,
  ) {
    this.intervalMs = Math.min(REFUSAL_FLUSH_MS.max, Math.max(REFUSAL_FLUSH_MS.min, intervalMs || 0));
  }

  onApplicationBootstrap(): void {
    this.tally.onNearFull(() => void this.flush());
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

  /** The shutdown step: no more timed flushes, the one running awaited, then a last one. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.flush();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.flush().then(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  private async flushNow(): Promise<void> {
    const counts = this.tally.take();
    if (counts.length === 0) return;
    try {
      await this.write(counts);
      if (this.failing) this.logger.log('refusal counts written again');
      this.failing = false;
    } catch (error) {
      this.tally.giveBack(counts);
      // Once per streak, by its code or name: a driver's message may quote a URL or a value.
      if (!this.failing) this.logger.warn(`refusal counts kept for the next flush: ${codeOf(error)}`);
      this.failing = true;
    }
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,32}$/i.test(code)) return code;
  return error instanceof Error ? error.name : 'unknown error';
}
