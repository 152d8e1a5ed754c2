/**
 * What the parts of one soak run share (bench/soak/run.ts): the plan drawn from its options, the
 * day's clock, and what the run saw: each client attempt, each fault's window, each fault and token
 * call the simulator answered. The parts write here; the report and run.json are read from here.
 */
import type { ClientAttempt, FaultWindow } from './explain.js';
import type { UnitPrice } from './report.js';

/** The run's options, clamped, with what follows from them. */
export interface SoakPlan {
  /** How long the traffic runs: 0.5 – 120. */
  minutes: number;
  durationMs: number;
  seed: number;
  /** Requests per second at the morning peak: 1 – 200. */
  peakRps: number;
  build: string;
  unitPrice: UnitPrice;
  redisEmpty: boolean;
  cluster: boolean;
  /** svc-budgeted's daily budget, in units. */
  budgetDailyUnits: number;
}

export class SoakRun {
  /** The start of the day: the run is made once everything is up, so that setup time is not traffic time. */
  readonly started = Date.now();
  /** Every request the client sent, each of its attempts (a retried request has two). */
  readonly attempts: ClientAttempt[] = [];
  /** How many attempts of each `<kind> <outcome>`, e.g. `login 200`. */
  readonly statuses = new Map<string, number>();
  /** Each fault that ran, from its start to its end (an upstream state: until the next fault). */
  readonly faultWindows: FaultWindow[] = [];
  /** Every fault the simulator took and every token call it answered, kept in run.json to explain a 5xx. */
  readonly faultsTaken: { at: number; path: string; kind: string }[] = [];
  readonly tokenCalls: { at: number; ok: boolean; status: number }[] = [];
  /** Budgets count from here: the last time Redis restarted empty, when it forgot what was spent. */
  budgetCountsFrom = new Date(0).toISOString();

  constructor(
    readonly plan: SoakPlan,
    /** Where the run's lines go (the CLI: stdout). */
    readonly print: (line: string) => void,
  ) {}

  /** A line stamped with the seconds since the start of the day. */
  log(line: string): void {
    this.print(`[${((Date.now() - this.started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  }

  /** Whether the day still runs: the traffic stops at its end. */
  dayRunning(): boolean {
    return Date.now() - this.started < this.plan.durationMs;
  }

  /** The share of the day gone: 0 at its start, 1 at its end. */
  phase(): number {
    return (Date.now() - this.started) / this.plan.durationMs;
  }

  /** When the day is `fraction` through (ms since the epoch). */
  timeAt(fraction: number): number {
    return this.started + fraction * this.plan.durationMs;
  }

  recordAttempt(attempt: ClientAttempt): void {
    this.attempts.push(attempt);
    const key = `${attempt.kind} ${attempt.outcome}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
  }
}
