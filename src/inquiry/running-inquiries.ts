import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { ProblemException } from '../problem/problem.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { DEADLINE_MARGIN_MS, inquiryBudget } from './inquiry-deadline.js';

/**
 * Every inquiry this process has taken and not yet settled, answered or not (a 202's
 * settlement is owed), and whether it still takes new ones: the shutdown sequence
 * (src/http/shutdown-sequence.ts) stops taking them, then drains the rest.
 */
@Injectable()
export class RunningInquiries {
  /** The context these lines have always carried (log queries select on it). */
  private readonly logger = new Logger('InquiryService');
  private readonly upstreamSettings: AppConfig['upstream'];
  private readonly running = new Set<Promise<unknown>>();
  private taking = true;

  constructor(config: ConfigService<AppConfig, true>) {
    this.upstreamSettings = config.get('upstream', { infer: true });
  }

  /** False once shutdown has begun: InquiryService then refuses a new inquiry (`refusal()`). */
  get accepting(): boolean {
    return this.taking;
  }

  /** 503 for an inquiry that arrives once shutdown has begun: nothing was written or sent. */
  refusal(): ProblemException {
    return new ProblemException(
      'upstream_unavailable',
      'This replica is shutting down; nothing was sent upstream. Retry: another replica takes it.',
      { headers: { [RETRY_AFTER_HEADER]: '1' } },
    );
  }

  /** `work` is counted as running until it ends, however it ends; returns `work`. */
  track<T>(work: Promise<T>): Promise<T> {
    const running = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(running);
    void running.then(() => this.running.delete(running));
    return work;
  }

  /** Keeps an accepted (202) inquiry's settlement running until it is done; its failure is logged. */
  owe(settled: Promise<unknown>): void {
    void this.track(settled).catch((error: unknown) => {
      this.logger.error(`accepted inquiry failed unexpectedly: ${error instanceof Error ? error.name : 'unknown'}`);
    });
  }

  /** A step of the shutdown sequence: new inquiries are refused from now on. */
  stopAccepting(): void {
    this.taking = false;
  }

  /**
   * A step of the shutdown sequence, after `stopAccepting`: waits until every inquiry taken
   * before it has settled, a 202's owed settlement included (test/async-inquiries.e2e.spec.ts,
   * 'SIGTERM waits for an accepted inquiry to settle before the process exits'). Waits at most
   * until the longest deadline an inquiry taken now could have (inquiry-deadline.ts). Returns
   * how many were still running then (0 normally).
   */
  async drain(): Promise<number> {
    const bound = inquiryBudget(this.upstreamSettings, 'advanced', Date.now()).deadline + DEADLINE_MARGIN_MS;
    if (this.running.size > 0) {
      this.logger.log(`shutting down with ${this.running.size} inquiry(ies) running; waiting for them`);
    }
    // A loop, not one allSettled over the set as it stands: an inquiry may finish by handing
    // its settlement to a new entry (owe), and every entry counts.
    while (this.running.size > 0 && Date.now() < bound) {
      await settledWithin(Promise.allSettled([...this.running]), bound - Date.now());
    }
    if (this.running.size > 0)
      this.logger.error(`${this.running.size} inquiry(ies) still running at the drain's bound`);
    return this.running.size;
  }
}

/** The promise's value if it settles within `ms`, else null (at once for 0). */
export async function settledWithin<T>(settled: Promise<T>, ms: number): Promise<T | null> {
  if (ms <= 0) return null;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
