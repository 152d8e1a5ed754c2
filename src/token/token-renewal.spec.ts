/**
 * The cross-replica renewal protocol (token-renewal.ts; docs/architecture.md, "Token
 * lifecycle"), one rule a spec: replicas are TokenRenewal instances sharing one in-memory
 * store, a fake upstream and a fake clock. The end-to-end specs (test/token-*.e2e.spec.ts)
 * prove the same rules over Redis and HTTP.
 */
import { beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { FakeClock, FakeUpstream, count, renewalMetrics, settle, tokenWorld } from '../../test/support/token-fakes.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { MemoryTokenStore } from './memory-token.store.js';
import { DEFAULT_REFRESH_LIFETIME_MS, type TokenRecord } from './token-record.js';
import { ANNOUNCEMENT_POLL_MS, TokenRenewal, type RenewalMetrics } from './token-renewal.js';
import { TokenUnavailableError } from './token-unavailable.error.js';
import { TokenStore } from './token.store.js';

const SKEW_MS = 60_000;
const LOCK_TTL_MS = 10_000;

let clock: FakeClock;
let store: MemoryTokenStore;
let upstream: FakeUpstream;

/** One replica; jitter fixed at none (random 0.5 → factor 1). */
function replica(on: TokenStore = store, metrics: RenewalMetrics = renewalMetrics()): TokenRenewal {
  return new TokenRenewal(on, upstream, metrics, clock, { refreshSkewMs: SKEW_MS, lockTtlMs: LOCK_TTL_MS }, () => 0.5);
}

/** A renewal started now, whose outcome is looked at later. */
function started(renewal: TokenRenewal, held: TokenRecord | null = null) {
  const outcome = renewal.renew(held).then(
    (record) => ({ record }),
    (error: unknown) => ({ error }),
  );
  return outcome;
}

/**
 * `first` wins the lock and calls the upstream, which holds its answer until `release`; then
 * `second` finds the lock taken and waits.
 */
async function whileRenewing(first: TokenRenewal, second: TokenRenewal) {
  const release = upstream.holdNext();
  const won = started(first);
  await settle();
  const waited = started(second);
  await settle();
  return { release, won, waited };
}

beforeAll(() => {
  Logger.overrideLogger(false);
});

beforeEach(() => {
  ({ clock, store, upstream } = tokenWorld());
});

describe('timing', () => {
  it('renews the refresh skew before expiry', async () => {
    const record = await replica().renew(null);
    expect(record.accessExpiresAt).toBe(clock.now() + 3600_000);
    expect(record.renewAt).toBe(clock.now() + 3600_000 - SKEW_MS);
  });

  it('never before half-life, for tokens shorter-lived than twice the skew', async () => {
    upstream.lifetimeSeconds = 100;
    const record = await replica().renew(null);
    expect(record.renewAt).toBe(clock.now() + 50_000);
  });

  it("a lifetime beyond the refresh token's year is used for a year at most", async () => {
    upstream.lifetimeSeconds = 2 ** 32;
    const record = await replica().renew(null);
    expect(record.accessExpiresAt).toBe(clock.now() + DEFAULT_REFRESH_LIFETIME_MS);
    expect(record.renewAt).toBe(clock.now() + DEFAULT_REFRESH_LIFETIME_MS - SKEW_MS);
  });

  it('adopts a shared record that is not yet due, without a call', async () => {
    const metrics = renewalMetrics();
    const first = await replica().renew(null);
    const adopted = await replica(store, metrics).renew(null);
    expect(adopted).toEqual(first);
    expect(upstream.grants).toEqual(['credentials']);
    expect(await count(metrics.tokenAdoptions)).toBe(1);
  });

  it('renews a due record with its refresh token, as the next generation', async () => {
    const renewal = replica();
    const first = await renewal.renew(null);
    await clock.advance(first.renewAt - clock.now());
    const second = await renewal.renew(first);
    expect(upstream.grants).toEqual(['credentials', 'refresh']);
    expect(second).toMatchObject({ accessToken: 'access-2', generation: 2 });
    expect(await store.read()).toEqual(second);
  });
});

describe('grant choice', () => {
  it.each([400, 401])('a refresh token rejected with %i falls back to credentials', async (status) => {
    const metrics = renewalMetrics();
    const renewal = replica(store, metrics);
    const first = await renewal.renew(null);
    await clock.advance(first.renewAt - clock.now());
    upstream.rejectNext(status, 'refresh token revoked');
    expect(await renewal.renew(first)).toMatchObject({ accessToken: 'access-2' });
    expect(upstream.grants).toEqual(['credentials', 'refresh', 'credentials']);
    expect(await count(metrics.tokenRenewals, { grant: 'refresh', result: 'failure' })).toBe(1);
  });

  it('any other failure of the refresh grant is not retried with credentials', async () => {
    const renewal = replica();
    const first = await renewal.renew(null);
    await clock.advance(first.renewAt - clock.now());
    upstream.rejectNext(503);
    await expect(renewal.renew(first)).rejects.toMatchObject({ reason: 'upstream_failure' });
    expect(upstream.grants).toEqual(['credentials', 'refresh']);
  });

  it('an expired refresh token is not offered', async () => {
    const renewal = replica();
    const first = await renewal.renew(null);
    await clock.advance(first.refreshExpiresAt - clock.now());
    await renewal.renew(first);
    expect(upstream.grants).toEqual(['credentials', 'credentials']);
  });
});

describe('lock', () => {
  it('the replica that loses the lock waits for the announcement and adopts the winner’s token', async () => {
    const [a, b] = [replica(), replica()];
    await b.start();
    const { release, won, waited } = await whileRenewing(a, b);
    release();
    expect(await won).toEqual({ record: expect.objectContaining({ accessToken: 'access-1' }) });
    expect(await waited).toEqual({ record: expect.objectContaining({ accessToken: 'access-1' }) });
    expect(upstream.grants).toEqual(['credentials']);
  });

  it('a missed announcement is made up for by re-reading the store', async () => {
    const [a, b] = [replica(), replica()]; // b never subscribes: it misses the announcement
    const { release, won, waited } = await whileRenewing(a, b);
    release();
    await won;
    await clock.advance(ANNOUNCEMENT_POLL_MS);
    expect(await waited).toEqual({ record: expect.objectContaining({ accessToken: 'access-1' }) });
    expect(upstream.grants).toEqual(['credentials']);
  });

  it('a waiting replica takes the lock over once it expires', async () => {
    const [a, b] = [replica(), replica()];
    upstream.holdNext(); // a's call never answers
    void started(a);
    await settle();
    let outcome: unknown;
    void started(b).then((result) => (outcome = result));
    while (outcome === undefined) await clock.advance(ANNOUNCEMENT_POLL_MS);
    expect(outcome).toEqual({ record: expect.objectContaining({ accessToken: 'access-1', generation: 1 }) });
    expect(upstream.grants).toEqual(['credentials', 'credentials']);
  });

  it('a renewal that outlives its lock keeps its token but leaves the newer shared record', async () => {
    const [a, b] = [replica(), replica()];
    const release = upstream.holdNext();
    const slow = started(a);
    await settle();
    await clock.advance(LOCK_TTL_MS);
    const taken = await b.renew(null); // the lock has expired: b renews
    release();
    expect(await slow).toEqual({ record: expect.objectContaining({ accessToken: 'access-2', generation: 0 }) });
    expect(await store.read()).toEqual(taken);
    expect(taken).toMatchObject({ accessToken: 'access-1', generation: 1 });
  });

  it('stop ends a wait for another replica’s renewal', async () => {
    const [a, b] = [replica(), replica()];
    const { waited } = await whileRenewing(a, b);
    b.stop();
    const { error } = (await waited) as { error: TokenUnavailableError };
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect(error.upstreamMessage).toBe('no token renewal finished in time');
  });
});

describe('backoff', () => {
  it('a failed renewal is every replica’s backoff: the others fail at once, with no call', async () => {
    upstream.rejectNext(403, 'Account is disabled');
    const failed = (await started(replica())) as { error: TokenUnavailableError };
    expect(failed.error).toMatchObject({ reason: 'account_disabled', retryAt: clock.now() + 1000 });
    expect(await store.readBackoff()).toEqual({ reason: 'account_disabled', attempts: 1, retryAt: clock.now() + 1000 });

    await expect(replica().renew(null)).rejects.toMatchObject({
      reason: 'account_disabled',
      retryAt: failed.error.retryAt,
    });
    expect(upstream.grants).toEqual(['credentials']);
  });

  it('doubles with every failed round, up to a minute', async () => {
    const renewal = replica();
    const delays: number[] = [];
    for (let round = 0; round < 8; round++) {
      upstream.rejectNext(500);
      const { error } = (await started(renewal)) as { error: TokenUnavailableError };
      delays.push(error.retryAt! - clock.now());
      await clock.advance(error.retryAt! - clock.now());
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('jitters each delay by up to ±20 %', async () => {
    const renewal = new TokenRenewal(
      store,
      upstream,
      renewalMetrics(),
      clock,
      { refreshSkewMs: SKEW_MS, lockTtlMs: LOCK_TTL_MS },
      () => 0,
    );
    upstream.rejectNext(500);
    await expect(renewal.renew(null)).rejects.toMatchObject({ retryAt: clock.now() + 800 });
  });

  it('a success clears it for everyone', async () => {
    const [a, b] = [replica(), replica()];
    upstream.rejectNext(500);
    const { error } = (await started(a)) as { error: TokenUnavailableError };
    await clock.advance(error.retryAt! - clock.now());
    await a.renew(null);
    expect(await store.readBackoff()).toBeNull();
    expect(await b.renew(null)).toMatchObject({ accessToken: 'access-1' });
    expect(upstream.grants).toEqual(['credentials', 'credentials']);
  });
});

describe('store unavailable', () => {
  /** Every store call fails as an unreachable Redis would. */
  const down = new Proxy({} as TokenStore, {
    get: (_target, operation) => () => Promise.reject(new StoreUnavailableError(String(operation))),
  });

  it('the replica renews on its own, with the refresh token it holds', async () => {
    const renewal = replica(down);
    const first = await renewal.renew(null);
    expect(first).toMatchObject({ accessToken: 'access-1', generation: 0 });
    await clock.advance(first.renewAt - clock.now());
    expect(await renewal.renew(first)).toMatchObject({ accessToken: 'access-2' });
    expect(upstream.grants).toEqual(['credentials', 'refresh']);
  });

  it("waits for a store that is still connecting before its first token, and adopts the other replica's", async () => {
    // A replica whose Redis (or Sentinel) is not ready yet at start-up, while another has renewed.
    let connected!: () => void;
    const connecting = new Promise<boolean>((resolve) => (connected = () => resolve(true)));
    let reachable = false;
    const late = new Proxy(store, {
      get: (target, operation, receiver) => {
        if (operation === 'whenReachable') return () => connecting;
        const value = Reflect.get(target, operation, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          reachable
            ? (value as (...a: unknown[]) => unknown).apply(target, args)
            : Promise.reject(new StoreUnavailableError(String(operation)));
      },
    });
    const shared = await replica().renew(null);
    const waiting = started(replica(late));
    await settle();
    expect(upstream.grants).toEqual(['credentials']);
    reachable = true;
    connected();
    expect(await waiting).toEqual({ record: shared });
    expect(upstream.grants).toEqual(['credentials']);
  });

  it('keeps its own backoff meanwhile', async () => {
    const renewal = replica(down);
    upstream.rejectNext(500);
    await expect(renewal.renew(null)).rejects.toBeInstanceOf(TokenUnavailableError);
    await expect(renewal.renew(null)).rejects.toMatchObject({ retryAt: clock.now() + 1000 });
    expect(upstream.grants).toEqual(['credentials']);
  });
});
