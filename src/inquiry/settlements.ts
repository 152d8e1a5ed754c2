import { Injectable, Logger } from '@nestjs/common';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';

/** Backoff between attempts at an owed write: doubling from the first, capped. */
const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 5_000;
/** How long a graceful shutdown waits for owed writes to reach the store. */
export const SHUTDOWN_FLUSH_MS = 5_000;
/** At most this many writes are owed at once (memory bound); the oldest is given up beyond it. */
export const MAX_OWED = 10_000;

interface Owed {
  write: () => Promise<void>;
  /** Epoch ms after which the write no longer matters (the record or claim has expired). */
  until: number;
  attempts: number;
  due: number;
}

/**
 * Writes that follow an upstream answer (a record's settlement, the Idempotency-Key's answer):
 * the caller has its answer, so a store failure must not lose them. A write that fails on a
 * store outage is owed: retried with a capped backoff, and at once when the Redis connection
 * is ready again, until it is stored or no longer matters (its record's TTL has passed). A
 * graceful shutdown waits up to `SHUTDOWN_FLUSH_MS` for owed writes before Redis is closed.
 *
 * Limits (docs/behaviour.md, "Failure handling"): owed writes live in this process only. If the process
 * dies, or the store is still down when the shutdown wait ends, they are logged at error by
 * trackId and lost; the record then reads `pending` until a retry with the Idempotency-Key
 * concludes it as `unknown` (the abandoned-claim rule). At most `MAX_OWED` are held.
 */
@Injectable()
export class Settlements {
  private readonly logger = new Logger(Settlements.name);
  private readonly owed = new Map<string, Owed>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(redis: RedisConnection) {
    redis.client?.on('ready', () => {
      if (this.owed.size > 0) this.schedule(0);
    });
  }

  /** Number of writes still owed to the store. */
  get size(): number {
    return this.owed.size;
  }

  /**
   * Writes now; on a store failure the write is owed (named `what`, e.g. "record of <trackId>",
   * replacing an earlier owed write of the same name) and retried until `until` (epoch ms).
   */
  async write(what: string, write: () => Promise<void>, until: number): Promise<void> {
    try {
      await write();
      this.owed.delete(what);
      return;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) {
        this.logger.error(`${what} cannot be stored: ${(error as Error).name}`);
        return;
      }
      this.logger.warn(`${what} not stored (${error.message}); owed until the store is back`);
    }
    this.owed.delete(what);
    if (this.owed.size >= MAX_OWED) {
      const [oldest] = this.owed.keys();
      this.owed.delete(oldest);
      this.logger.error(`${oldest} given up: more than ${MAX_OWED} writes owed`);
    }
    this.owed.set(what, { write, until, attempts: 1, due: Date.now() + FIRST_RETRY_MS });
    this.schedule(FIRST_RETRY_MS);
  }

  /** Tries every owed write once (those due, or all when `all`). */
  private flush(all: boolean): Promise<void> {
    this.flushing ??= this.attemptOwed(all).finally(() => {
      this.flushing = undefined;
      this.scheduleNext();
    });
    return this.flushing;
  }

  private async attemptOwed(all: boolean): Promise<void> {
    const now = Date.now();
    for (const [what, owed] of [...this.owed]) {
      if (now > owed.until) {
        this.owed.delete(what);
        this.logger.error(`${what} given up: it expired before the store came back`);
        continue;
      }
      if (!all && owed.due > now) continue;
      try {
        await owed.write();
        if (this.owed.get(what) === owed) this.owed.delete(what);
        this.logger.log(`${what} stored after ${owed.attempts} failed attempt(s)`);
      } catch (error) {
        owed.attempts += 1;
        owed.due = Date.now() + Math.min(FIRST_RETRY_MS * 2 ** owed.attempts, MAX_RETRY_MS);
        if (!(error instanceof StoreUnavailableError)) {
          this.owed.delete(what);
          this.logger.error(`${what} cannot be stored: ${(error as Error).name}`);
        }
      }
    }
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush(delayMs === 0);
    }, delayMs);
    this.timer.unref();
  }

  private scheduleNext(): void {
    if (this.owed.size === 0 || this.closed) return;
    const next = Math.min(...[...this.owed.values()].map((o) => o.due));
    this.schedule(Math.max(0, next - Date.now()));
  }

  /**
   * A step of the shutdown sequence (src/http/shutdown-sequence.ts), before Redis closes and
   * after every accepted inquiry has settled, so no new writes come. Owed writes get `SHUTDOWN_FLUSH_MS`.
   */
  async flushOwed(): Promise<void> {
    if (this.owed.size === 0) return;
    const deadline = Date.now() + SHUTDOWN_FLUSH_MS;
    this.logger.warn(`shutting down with ${this.owed.size} write(s) owed to the store; flushing`);
    while (this.owed.size > 0 && Date.now() < deadline) {
      await this.flush(true);
      if (this.owed.size > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const what of this.owed.keys()) this.logger.error(`${what} lost at shutdown: the store did not come back`);
    this.owed.clear();
  }
}
