/**
 * The store contracts, run against both implementations: Redis (a real redis-server) and
 * the in-process one. Same tests, same expectations: the sandbox and production differ in
 * reach (one replica vs many), not in behaviour.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { MemoryIdempotencyStore, MemoryInquiryStore } from '../src/inquiry/memory-inquiry.store.js';
import type { IdempotencyClaim, InquiryRecord } from '../src/inquiry/inquiry-record.js';
import type { IdempotencyStore, InquiryStore } from '../src/inquiry/inquiry.store.js';
import { RedisIdempotencyStore, RedisInquiryStore } from '../src/inquiry/redis-inquiry.store.js';
import { Secret } from '../src/config/secret.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import { MemoryTokenStore } from '../src/token/memory-token.store.js';
import { RedisTokenStore } from '../src/token/redis-token.store.js';
import type { TokenStore } from '../src/token/token.store.js';
import { redisPerFile } from './support/file-redis.js';
import { RedisServer } from './support/redis-server.js';

const RECORD = {
  accessToken: 'a1',
  refreshToken: 'r1',
  accessExpiresAt: 2_000,
  renewAt: 1_000,
  refreshExpiresAt: 9_000,
};

const redis = redisPerFile();
const connect = () => redis.client({ maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: false });

async function ready(client: Redis): Promise<Redis> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

const KEY = randomBytes(32).toString('base64');

function redisStores(cipher: StoreCipher) {
  return async () => {
    const keys = redis.keys('s');
    const client = await ready(connect());
    const subscriber = await ready(connect());
    return {
      tokens: new RedisTokenStore(client, subscriber, keys, cipher),
      inquiries: new RedisInquiryStore(client, keys, cipher),
      idempotency: new RedisIdempotencyStore(client, keys, cipher),
    };
  };
}

const implementations: Array<
  [string, () => Promise<{ tokens: TokenStore; inquiries: InquiryStore; idempotency: IdempotencyStore }>]
> = [
  ['redis', redisStores(new StoreCipher([]))],
  // The same contract with values sealed (store-cipher.ts): the Lua scripts still read what they need.
  ['redis, encrypted at rest', redisStores(new StoreCipher([{ id: 'k1', key: new Secret(KEY) }]))],
  [
    'memory',
    () =>
      Promise.resolve({
        tokens: new MemoryTokenStore(),
        inquiries: new MemoryInquiryStore(),
        idempotency: new MemoryIdempotencyStore(),
      }),
  ],
];

describe.each(implementations)('%s stores', (_name, make) => {
  describe('TokenStore', () => {
    it('grants the lock to one owner at a time and releases only for its owner', async () => {
      const { tokens } = await make();
      expect(await tokens.tryLock('a', 10_000)).toBe(true);
      expect(await tokens.tryLock('b', 10_000)).toBe(false);
      await tokens.unlock('b'); // not b's lock: compare-and-delete leaves it
      expect(await tokens.tryLock('b', 10_000)).toBe(false);
      await tokens.unlock('a');
      expect(await tokens.tryLock('b', 10_000)).toBe(true);
    });

    it('of 50 concurrent lock attempts exactly one wins', async () => {
      const { tokens } = await make();
      const wins = await Promise.all(Array.from({ length: 50 }, (_, i) => tokens.tryLock(`o${i}`, 10_000)));
      expect(wins.filter(Boolean)).toHaveLength(1);
    });

    it('writes only while holding the lock and at the expected generation', async () => {
      const { tokens } = await make();
      expect(await tokens.writeIfOwner('a', 0, RECORD, 60_000)).toBeNull(); // no lock held
      await tokens.tryLock('a', 10_000);
      expect(await tokens.writeIfOwner('a', 0, RECORD, 60_000)).toBe(1);
      expect(await tokens.writeIfOwner('a', 0, { ...RECORD, accessToken: 'stale' }, 60_000)).toBeNull(); // generation moved on
      expect(await tokens.writeIfOwner('a', 1, { ...RECORD, accessToken: 'a2' }, 60_000)).toBe(2);
      expect(await tokens.read()).toEqual({ ...RECORD, accessToken: 'a2', generation: 2 });
    });

    it('invalidates the access token only while it is the current one, keeping the refresh token', async () => {
      const { tokens } = await make();
      await tokens.tryLock('a', 10_000);
      await tokens.writeIfOwner('a', 0, RECORD, 60_000);
      expect(await tokens.invalidateIfCurrent('not-current')).toBe(false);
      expect((await tokens.read())?.accessExpiresAt).toBe(RECORD.accessExpiresAt);
      expect(await tokens.invalidateIfCurrent('a1')).toBe(true);
      expect(await tokens.read()).toMatchObject({
        accessToken: 'a1',
        refreshToken: 'r1',
        accessExpiresAt: 0,
        renewAt: 0,
      });
    });

    it('keeps the renewal backoff until it is cleared or its time is up', async () => {
      const { tokens } = await make();
      expect(await tokens.readBackoff()).toBeNull();
      const backoff = { reason: 'account_disabled' as const, attempts: 2, retryAt: Date.now() + 2000 };
      await tokens.writeBackoff(backoff, 60_000);
      expect(await tokens.readBackoff()).toEqual(backoff);
      await tokens.clearBackoff();
      expect(await tokens.readBackoff()).toBeNull();
      await tokens.writeBackoff(backoff, 1);
      // Expired (1 ms TTL): read once the TTL has passed, by polling the store, not a fixed sleep.
      for (let i = 0; i < 10_000 && (await tokens.readBackoff()) !== null; i++)
        await new Promise((r) => setImmediate(r));
      expect(await tokens.readBackoff()).toBeNull();
    });

    it('announces renewals to subscribers', async () => {
      const { tokens } = await make();
      const heard = new Promise<number>((resolve) => void tokens.onRenewed(resolve));
      // Pub/sub delivery needs the subscription in place: publish until it is heard.
      let generation = 0;
      const publisher = setInterval(() => void tokens.publishRenewed(++generation), 20);
      try {
        expect(await heard).toBeGreaterThan(0);
      } finally {
        clearInterval(publisher);
      }
    });
  });

  describe('InquiryStore', () => {
    const record = (trackId: string): InquiryRecord => ({
      trackId,
      clientId: 'c1',
      operation: 'shahkar',
      requestHandlingType: 'standard',
      fingerprint: 'f',
      status: 'pending',
      createdAt: '2026-01-01T00:00:00.000Z',
    });

    it('creates once, settles, reads back', async () => {
      const { inquiries } = await make();
      await inquiries.create(record('t1'), 60);
      await expect(inquiries.create(record('t1'), 60)).rejects.toThrow();
      await inquiries.settle({ ...record('t1'), status: 'succeeded', data: { isMatch: true } });
      expect(await inquiries.get('t1')).toMatchObject({ status: 'succeeded', data: { isMatch: true }, clientId: 'c1' });
      expect(await inquiries.get('missing')).toBeNull();
      // Settling never creates a record that is not there (expired, or never written).
      await inquiries.settle({ ...record('t2'), status: 'failed' });
      expect(await inquiries.get('t2')).toBeNull();
    });

    it('concludes a pending record unknown, and never a settled one', async () => {
      const { inquiries } = await make();
      await inquiries.create(record('p1'), 60);
      expect(await inquiries.concludeUnknown('p1', '2026-01-01T00:01:00.000Z')).toMatchObject({
        status: 'unknown',
        completedAt: '2026-01-01T00:01:00.000Z',
      });
      expect(await inquiries.get('p1')).toMatchObject({ status: 'unknown' });
      // A late owed settlement resolves the unknown (intended: a later fact wins, docs/behaviour.md).
      await inquiries.settle({ ...record('p1'), status: 'succeeded', data: { isMatch: false } });
      expect(await inquiries.get('p1')).toMatchObject({ status: 'succeeded', data: { isMatch: false } });
      await inquiries.create(record('s1'), 60);
      await inquiries.settle({ ...record('s1'), status: 'succeeded', data: { isMatch: true } });
      expect(await inquiries.concludeUnknown('s1', '2026-01-01T00:01:00.000Z')).toMatchObject({ status: 'succeeded' });
      expect(await inquiries.get('s1')).toMatchObject({ status: 'succeeded', data: { isMatch: true } });
      expect(await inquiries.concludeUnknown('missing', '2026-01-01T00:01:00.000Z')).toBeNull();
    });
  });

  describe('IdempotencyStore', () => {
    const claim = (trackId: string): IdempotencyClaim => ({ trackId, fingerprint: 'f', state: 'in_flight' });

    it('of 50 concurrent claims on one key exactly one wins; the others see it', async () => {
      const { idempotency } = await make();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => idempotency.claim('c1', 'k', claim(`t${i}`), 60)),
      );
      const winners = results.filter((r) => r === null);
      expect(winners).toHaveLength(1);
      const winner = results.findIndex((r) => r === null);
      expect(new Set(results.filter(Boolean).map((r) => r!.trackId))).toEqual(new Set([`t${winner}`]));
    });

    it('the same claim made again is answered with itself: null only when it was not there', async () => {
      const { idempotency } = await make();
      const made = { ...claim('t1'), claimedAt: 1 };
      expect(await idempotency.claim('c1', 'again', made, 60)).toBeNull();
      expect(await idempotency.claim('c1', 'again', made, 60)).toEqual(made);
    });

    it('keys are per client', async () => {
      const { idempotency } = await make();
      expect(await idempotency.claim('c1', 'k', claim('t1'), 60)).toBeNull();
      expect(await idempotency.claim('c2', 'k', claim('t2'), 60)).toBeNull();
    });

    it('completes with the response, and releases only its own claim', async () => {
      const { idempotency } = await make();
      await idempotency.claim('c1', 'k', claim('t1'), 60);
      await idempotency.release('c1', 'k', 'other');
      expect(await idempotency.claim('c1', 'k', claim('t2'), 60)).toMatchObject({ trackId: 't1' });
      const response = { status: 200, contentType: 'application/json', body: { ok: true }, trackId: 't1' };
      // Resolves whether it stored: false for another trackId's claim, or one already done.
      await expect(
        idempotency.complete('c1', 'k', {
          ...claim('other'),
          state: 'done',
          response: { ...response, trackId: 'other' },
        }),
      ).resolves.toBe(false);
      expect(await idempotency.claim('c1', 'k', claim('t3'), 60)).toEqual(claim('t1')); // not its claim: unchanged
      await expect(idempotency.complete('c1', 'k', { ...claim('t1'), state: 'done', response })).resolves.toBe(true);
      expect(await idempotency.claim('c1', 'k', claim('t3'), 60)).toEqual({ ...claim('t1'), state: 'done', response });
      // The first answer stored stays: a late second completion does not replace it.
      await expect(
        idempotency.complete('c1', 'k', { ...claim('t1'), state: 'done', response: { ...response, status: 504 } }),
      ).resolves.toBe(false);
      expect(await idempotency.claim('c1', 'k', claim('t3'), 60)).toEqual({ ...claim('t1'), state: 'done', response });
      await idempotency.release('c1', 'k', 't1');
      expect(await idempotency.claim('c1', 'k', claim('t4'), 60)).toBeNull();
    });
  });
});

describe('RedisInquiryStore.concludeUnknown', () => {
  it.each([
    ['in clear', new StoreCipher([])],
    ['encrypted at rest', new StoreCipher([{ id: 'k1', key: new Secret(KEY) }])],
  ])('%s: a settlement landing between its read and its write is kept, not overwritten', async (_name, cipher) => {
    const keys = redis.keys('race');
    const client = await ready(connect());
    const inquiries = new RedisInquiryStore(client, keys, cipher);
    const settling = new RedisInquiryStore(await ready(connect()), keys, cipher);
    const pending: InquiryRecord = {
      trackId: 'r1',
      clientId: 'c1',
      operation: 'shahkar',
      requestHandlingType: 'standard',
      fingerprint: 'f',
      status: 'pending',
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    await inquiries.create(pending, 60);
    // The settlement lands right after concludeUnknown has read the pending record.
    const read = client.get.bind(client);
    let raced = false;
    (client as unknown as { get: (key: string) => Promise<string | null> }).get = async (key: string) => {
      const value = await read(key);
      if (!raced) {
        raced = true;
        await settling.settle({ ...pending, status: 'succeeded', data: { isMatch: true } });
      }
      return value;
    };
    expect(await inquiries.concludeUnknown('r1', '2026-01-01T00:01:00.000Z')).toMatchObject({
      status: 'succeeded',
      data: { isMatch: true },
    });
    expect(raced).toBe(true);
    expect(await settling.get('r1')).toMatchObject({ status: 'succeeded', data: { isMatch: true } });
    // What concludeAbandoned wrote before: an unconditional write over the record loses it.
    await inquiries.settle({ ...pending, status: 'unknown' });
    expect(await settling.get('r1')).toMatchObject({ status: 'unknown' });
  });
});

describe('Redis key layout', () => {
  it('puts the token record and its lock in one Cluster slot, and inquiries in their own', () => {
    const keys = new RedisKeys('vgw');
    const tag = (key: string) => /\{([^}]+)\}/.exec(key)?.[1];
    expect(tag(keys.tokenRecord())).toBe(tag(keys.tokenLock()));
    expect(tag(keys.inquiry('t1'))).not.toBe(tag(keys.inquiry('t2')));
    expect(keys.idempotency('c1', 'ab')).toBe('{vgw:idem:c1:ab}');
  });
});

describe('Redis outage', () => {
  it('store calls fail fast with StoreUnavailableError while Redis is down', async () => {
    const server = await RedisServer.start();
    const client = new Redis(server.url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    await ready(client);
    const store = new RedisInquiryStore(client, new RedisKeys('o'), new StoreCipher([]));
    const closed = new Promise((resolve) => client.once('close', resolve));
    await server.kill();
    await closed;
    try {
      await expect(store.get('t1')).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
