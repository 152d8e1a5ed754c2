import { describe, expect, it } from '@jest/globals';
import { MAX_RETRY_DELAY_MS, nextAttempt } from './retry-schedule.js';

const settings = { firstRetryMs: 5_000, retryForMs: 86_400_000 };
const at = (attempt: number, now = 1_000) => ({ attempt, retrySince: 0, now });

describe('nextAttempt', () => {
  it('doubles from the first delay, jittered between half and all of it', () => {
    expect(nextAttempt(at(1), settings, () => 1)).toEqual({ dead: false, delayMs: 5_000 });
    expect(nextAttempt(at(1), settings, () => 0)).toEqual({ dead: false, delayMs: 2_500 });
    expect(nextAttempt(at(3), settings, () => 1)).toEqual({ dead: false, delayMs: 20_000 });
  });

  it('waits at most an hour, however many attempts failed', () => {
    expect(nextAttempt(at(500), settings, () => 1)).toEqual({ dead: false, delayMs: MAX_RETRY_DELAY_MS });
  });

  it('retries at the end of the period at the latest, then the delivery is dead', () => {
    expect(nextAttempt(at(20, 86_399_000), settings, () => 1)).toEqual({ dead: false, delayMs: 1_000 });
    expect(nextAttempt(at(21, 86_400_000), settings, () => 1)).toEqual({ dead: true });
  });
});
