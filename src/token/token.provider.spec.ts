/**
 * The token this process holds (token.provider.ts): single flight in the process, renewal in
 * the background when due, the next attempt when a backoff ends, and a 401 from the upstream.
 * The protocol between replicas is token-renewal.spec.ts's.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import {
  renewalMetrics,
  settle,
  tokenWorld,
  type FakeClock,
  type FakeUpstream,
} from '../../test/support/token-fakes.js';
import type { MemoryTokenStore } from './memory-token.store.js';
import { TokenProvider } from './token.provider.js';
import { TokenRenewal } from './token-renewal.js';
import { TokenUnavailableError } from './token-unavailable.error.js';

let clock: FakeClock;
let store: MemoryTokenStore;
let upstream: FakeUpstream;
let tokens: TokenProvider;

beforeAll(() => {
  Logger.overrideLogger(false);
});

beforeEach(() => {
  ({ clock, store, upstream } = tokenWorld());
  const timing = { refreshSkewMs: 60_000, lockTtlMs: 10_000 };
  tokens = new TokenProvider(
    new TokenRenewal(store, upstream, renewalMetrics(), clock, timing, () => 0.5),
    store,
    clock,
  );
});

afterEach(() => tokens.stop());

describe('TokenProvider', () => {
  it('fetches the first token at startup and is then complete, successfully or not', async () => {
    upstream.rejectNext(403);
    await tokens.onApplicationBootstrap();
    expect(tokens.startupComplete).toBe(false);
    await settle();
    expect(tokens.startupComplete).toBe(true);
    expect(tokens.heldAccessToken()).toBeUndefined();
  });

  it('callers during a renewal share it: one call', async () => {
    const release = upstream.holdNext();
    const both = Promise.all([tokens.getAccessToken(), tokens.getAccessToken()]);
    release();
    expect(await both).toEqual(['access-1', 'access-1']);
    expect(upstream.grants).toEqual(['credentials']);
  });

  it('renews in the background when due, while the held token is still sent', async () => {
    await tokens.getAccessToken();
    const { renewAt } = (await store.read())!;
    await clock.advance(renewAt - clock.now());
    expect(upstream.grants).toEqual(['credentials', 'refresh']);
    expect(tokens.heldAccessToken()).toBe('access-2');
  });

  it('tries again when the backoff ends', async () => {
    upstream.rejectNext(500);
    await expect(tokens.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(1000);
    expect(upstream.grants).toEqual(['credentials', 'credentials']);
    expect(tokens.heldAccessToken()).toBe('access-1');
  });

  it('after shutdown, nothing is renewed', async () => {
    await tokens.getAccessToken();
    tokens.stop();
    const { renewAt } = (await store.read())!;
    await clock.advance(renewAt - clock.now());
    expect(upstream.grants).toEqual(['credentials']);
    expect(clock.pendingSleeps).toBe(0);
  });

  describe('a token the upstream rejects (401)', () => {
    it('is expired here and in the store, and renewed once', async () => {
      const rejected = await tokens.getAccessToken();
      expect(await tokens.renewAfterRejection(rejected)).toBe('access-2');
      expect(upstream.grants).toEqual(['credentials', 'refresh']);
      expect(await store.read()).toMatchObject({ accessToken: 'access-2', generation: 2 });
      expect(tokens.heldAccessToken()).toBe('access-2');
    });

    it('is given up when the renewal brings the same token back', async () => {
      const rejected = await tokens.getAccessToken();
      upstream.answerNext({ accessToken: rejected, refreshToken: 'refresh-1', tokenType: 'Bearer', expiresTn: 3600 });
      await expect(tokens.renewAfterRejection(rejected)).rejects.toMatchObject({
        reason: 'upstream_failure',
        upstreamMessage: 'renewed token was rejected',
      });
    });

    it('that is no longer current leaves the newer token in place', async () => {
      const old = await tokens.getAccessToken();
      expect(await tokens.renewAfterRejection(old)).toBe('access-2');
      expect(await tokens.renewAfterRejection(old)).toBe('access-2');
      expect(upstream.grants).toEqual(['credentials', 'refresh']);
    });
  });
});
