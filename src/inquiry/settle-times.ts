import { Injectable } from '@nestjs/common';
import type { RequestHandlingType } from './inquiry-record.js';

/** Weight of the newest inquiry in the running average (about the last 20 count). */
const SMOOTHING = 0.1;

/**
 * How long inquiries take upstream lately, per handling type (an exponentially weighted
 * average): the gateway's estimate, in a 202's `Retry-After`, of when the result will be ready.
 * One replica's view; before its first inquiry of a type it says 1 s.
 */
@Injectable()
export class SettleTimes {
  private readonly averageMs = new Map<RequestHandlingType, number>();

  observe(handling: RequestHandlingType, ms: number): void {
    const average = this.averageMs.get(handling);
    this.averageMs.set(handling, average === undefined ? ms : average + SMOOTHING * (ms - average));
  }

  /** Whole seconds (at least 1) until an inquiry started at `startedAt` (default now) is likely settled. */
  secondsLeft(handling: RequestHandlingType, startedAt = Date.now()): number {
    const expected = this.averageMs.get(handling) ?? 0;
    return Math.max(1, Math.ceil((startedAt + expected - Date.now()) / 1000));
  }
}
