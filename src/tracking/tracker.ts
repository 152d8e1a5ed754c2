import { Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { ResolutionMoves } from '../ledger/resolution-moves.js';
import type { QuestionLimiter } from './question-limiter.js';
import { ASK_FOR_HOURS, type Lease, type TrackingBook, type TrackingCandidate } from './tracking-book.js';
import type { TrackingConfig } from '../config/tracking-config.js';
import type { TrackingMetrics } from './tracking-metrics.js';
import type { TrackingQuestions } from './tracking-questions.js';

/** Candidates read per round: at most a minute's questions, and never a large page. */
const MAX_ROUND = 100;
/** The longest pause between two questions about one inquiry: still several a day. */
export const MAX_BACKOFF_SECONDS = 1_800;
/** How often the gauge of unknowns older than a day is refreshed. */
const GAUGE_EVERY_MS = 60_000;
/**
 * How long stop() waits for the round under way: a ledger or upstream that stopped answering
 * does not hold back the shutdown steps after it (test/tracking-shutdown.integration.spec.ts).
 */
export const TRACKER_STOP_MS = 5_000;

/**
 * Seconds before an inquiry is asked about again after `questions` answers that taught nothing:
 * afterSeconds, doubled each time, at most MAX_BACKOFF_SECONDS (tracker.spec.ts).
 */
export function backoffSeconds(afterSeconds: number, questions: number): number {
  return Math.min(MAX_BACKOFF_SECONDS, afterSeconds * 2 ** Math.min(questions, 20));
}

/** How often a replica looks for due unknowns: afterSeconds, at most 5 s, at least 1 s. */
export function roundMs(afterSeconds: number): number {
  return Math.min(5, Math.max(1, afterSeconds)) * 1000;
}

/** What asking takes, present when UPSTREAM_TRACKING is set. */
export interface Asking {
  config: TrackingConfig;
  questions: TrackingQuestions;
  limiter: QuestionLimiter;
}

/**
 * Asks the upstream's tracking service about each `unknown` inquiry (docs/api.md §8), on every
 * replica, off every inquiry's path: a round every roundMs() reads the due unknowns from the
 * ledger and, one at a time, takes the inquiry's lease (one replica asks about it at a time), a
 * question from the shared per-minute allowance, asks, and records the answer: learned, the
 * resolution is appended once and its budget move told (ResolutionMoves, as a reconciliation's);
 * not learned, the inquiry backs off. After ASK_FOR_HOURS it is reconciliation's alone.
 * Without UPSTREAM_TRACKING it only refreshes the gauge.
 */
export class Tracker implements OnApplicationBootstrap {
  private readonly logger = new Logger('Tracker');
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> = Promise.resolve();
  private stopped = false;
  private gaugeAt = 0;
  private failing = false;

  constructor(
    private readonly asking: Asking | undefined,
    private readonly book: TrackingBook,
    private readonly moves: ResolutionMoves,
    private readonly metrics: TrackingMetrics,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule(0);
  }

  /** Ends the rounds; resolves once the round under way (at most one question) is over, or after TRACKER_STOP_MS. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let bound: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (bound = setTimeout(resolve, TRACKER_STOP_MS)));
    await Promise.race([this.round, late]);
    clearTimeout(bound);
    await this.asking?.questions.close();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.round = this.runRound().finally(() => this.schedule(roundMs(this.asking?.config.afterSeconds ?? 60)));
    }, ms);
    this.timer.unref();
  }

  private async runRound(): Promise<void> {
    try {
      if (Date.now() - this.gaugeAt >= GAUGE_EVERY_MS) {
        this.metrics.unknownsOlderThanADay.set(await this.book.unknownsOlderThanADay());
        this.gaugeAt = Date.now();
      }
      if (this.asking) await this.ask(this.asking);
      if (this.failing) this.logger.log({ msg: 'tracking rounds work again', event: 'tracking_recovered' });
      this.failing = false;
    } catch (error) {
      // The ledger or Redis unreachable: the next round tries again; said once per outage.
      if (!this.failing) {
        this.logger.warn({
          msg: 'a tracking round failed; retried next round',
          event: 'tracking_round_failed',
          cause: String(error),
        });
      }
      this.failing = true;
    }
  }

  private async ask({ config, questions: service, limiter }: Asking): Promise<void> {
    // Moves a crash left untold (after a commit, before the budget took it), any resolver's.
    await this.moves.tell({ from: new Date(Date.now() - (ASK_FOR_HOURS + 1) * 3_600_000), to: new Date() });
    const due = await this.book.due(config.afterSeconds, Math.min(MAX_ROUND, config.perMinute));
    for (const candidate of due) {
      if (this.stopped) return;
      const lease = await this.book.lease(candidate, service.leaseSeconds);
      if (lease === undefined) continue;
      if (!(await limiter.take())) {
        await this.book.release(lease);
        return;
      }
      await this.askAbout(candidate, lease, config, service);
    }
  }

  private async askAbout(
    candidate: TrackingCandidate,
    lease: Lease,
    config: TrackingConfig,
    service: TrackingQuestions,
  ): Promise<void> {
    const answer = await service.ask(candidate.trackId);
    this.metrics.questions.inc({ result: answer.result });
    if (answer.learned === undefined) {
      await this.book.unanswered(lease, answer.result, backoffSeconds(config.afterSeconds, lease.questions + 1));
      return;
    }
    if (await this.book.learned(candidate.trackId, answer.result, answer.learned === 'yes')) {
      this.logger.log({
        msg: 'unknown inquiry resolved by the tracking service',
        event: 'tracking_resolved',
        trackId: candidate.trackId,
        charged: answer.learned,
      });
    }
    const at = candidate.createdAt.getTime();
    await this.moves.tell({ from: new Date(at), to: new Date(at + 1) });
  }
}
