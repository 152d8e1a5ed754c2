/**
 * Stand-ins for the unit specs of the token renewal (src/token/*.spec.ts): a clock that moves
 * only when told to, and an upstream that issues numbered token pairs or fails on request.
 * No timers, no sockets: a spec runs in milliseconds.
 */
import { Counter } from 'prom-client';
import { Clock } from '../../src/token/clock.js';
import { MemoryTokenStore } from '../../src/token/memory-token.store.js';
import type { RenewalMetrics, TokenIssuer } from '../../src/token/token-renewal.js';
import type { UpstreamTokenData } from '../../src/upstream/upstream-envelope.js';
import { UpstreamError } from '../../src/upstream/upstream-error.js';
import type { TokenGrant } from '../../src/upstream/upstream.client.js';

/** Lets every promise callback that is ready run (no time passes). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class FakeClock extends Clock {
  private current = Date.UTC(2026, 0, 1);
  private sleepers: Array<{ at: number; wake: () => void }> = [];

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((wake) => {
      const sleeper = { at: this.current + Math.max(0, ms), wake };
      this.sleepers.push(sleeper);
      signal.addEventListener('abort', () => this.wake([sleeper]), { once: true });
    });
  }

  /** Moves time on by `ms`, wakes every sleeper that is due, and lets what they start run. */
  async advance(ms: number): Promise<void> {
    this.current += ms;
    this.wake(this.sleepers.filter((sleeper) => sleeper.at <= this.current));
    await settle();
  }

  /** Sleepers still waiting (abort removes one). */
  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  private wake(due: Array<{ at: number; wake: () => void }>): void {
    this.sleepers = this.sleepers.filter((sleeper) => !due.includes(sleeper));
    for (const sleeper of due) sleeper.wake();
  }
}

/** One GetToken answer: a pair, a failure, or one held until `release` is called. */
type Answer = (grant: TokenGrant) => Promise<UpstreamTokenData>;

/** The upstream's GetToken: `access-1`/`refresh-1`, then `-2`…, each living `lifetimeSeconds`. */
export class FakeUpstream implements TokenIssuer {
  readonly grants: Array<TokenGrant['kind']> = [];
  lifetimeSeconds = 3600;
  private issued = 0;
  private readonly answers: Answer[] = [];

  getToken(grant: TokenGrant): Promise<UpstreamTokenData> {
    this.grants.push(grant.kind);
    return (this.answers.shift() ?? (() => Promise.resolve(this.issue())))(grant);
  }

  /** The next call fails as the upstream's error envelope with this HTTP status would (§7.1). */
  rejectNext(httpStatus: number, upstreamMessage?: string): void {
    this.answers.push(() => Promise.reject(new UpstreamError('rejected', { httpStatus, upstreamMessage })));
  }

  /** The next call answers `pair` (the same pair twice, for instance). */
  answerNext(pair: UpstreamTokenData): void {
    this.answers.push(() => Promise.resolve(pair));
  }

  /** The next call waits until the returned function is called, then issues a pair. */
  holdNext(): () => void {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.answers.push(() => released.then(() => this.issue()));
    return release;
  }

  private issue(): UpstreamTokenData {
    this.issued += 1;
    return {
      accessToken: `access-${this.issued}`,
      refreshToken: `refresh-${this.issued}`,
      tokenType: 'Bearer',
      expiresTn: this.lifetimeSeconds,
    };
  }
}

/** The renewal's counters, on no registry. */
export function renewalMetrics(): RenewalMetrics {
  const counter = (name: string, labelNames: string[]) => new Counter({ name, help: name, labelNames, registers: [] });
  return {
    tokenRenewals: counter('renewals', ['grant', 'result']),
    tokenRenewalFailures: counter('failures', ['reason']),
    tokenAdoptions: counter('adoptions', []),
  };
}

/** A counter's value for these labels (0 when never incremented). */
export async function count(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  const match = values.find((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label));
  return match?.value ?? 0;
}

/** A fresh clock, an in-memory store on it, and an upstream: what every token spec starts from. */
export function tokenWorld(): { clock: FakeClock; store: MemoryTokenStore; upstream: FakeUpstream } {
  const clock = new FakeClock();
  return { clock, store: new MemoryTokenStore(clock), upstream: new FakeUpstream() };
}
