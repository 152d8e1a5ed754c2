/**
 * The pause of a background loop that another part may end early: its stop() (shutdown) or news
 * that there is work again. One pause at a time; once ended, every pause returns at once, so a
 * stop() that came while no pause was under way never waits out the next one (up to 30 s for
 * the ledger drainer's backoff).
 */
export class WakeablePause {
  private wakeUp: (() => void) | null = null;
  private ended = false;

  /** Waits `ms`, or less when woken or ended. */
  for(ms: number): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      // A background loop's pause is never why a process stays alive (one whose owner was never
      // stopped, e.g. a test's app that failed to start, held Jest's worker up to 30 s; issue 47).
      timer.unref();
      this.wakeUp = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
    });
  }

  /** Ends the pause under way, if any. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Ends the pause under way and every later one (shutdown). */
  end(): void {
    this.ended = true;
    this.wake();
  }
}
