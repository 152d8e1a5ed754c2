/**
 * The answer store's rules (src/reuse/answer-store.ts) on both implementations: the Redis
 * scripts on a real redis-server and the in-process store. Ages are made by moving the stored
 * answer's stamp back (Redis) or the clock forward (memory), never by waiting.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import { LEADER_LEASE_MS, type AnswerStore, type ReuseAllowance } from '../src/reuse/answer-store.js';
import { MemoryAnswerStore } from '../src/reuse/memory-answer.store.js';
import { RedisAnswerStore } from '../src/reuse/redis-answer.store.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { redisPerFile } from './support/file-redis.js';

const redis = redisPerFile();

const ring = (id: string) => [{ id, key: new Secret(randomBytes(32).toString('base64')) }];

/** One store under test, and a way to make its stored answer on a question older. */
interface Subject {
  store: AnswerStore;
  age: (questionKey: string, ms: number) => Promise<void>;
}

const subjects: Array<[string, () => Subject]> = [
  [
    'memory',
    () => {
      let now = Date.now();
      return {
        store: new MemoryAnswerStore(() => now),
        age: (_key, ms) => {
          now += ms;
          return Promise.resolve();
        },
      };
    },
  ],
  [
    'redis',
    () => {
      const c = redis.client();
      const keys = redis.keys('reuse');
      return {
        store: new RedisAnswerStore(c, keys, new StoreCipher(ring('k1'))),
        age: async (questionKey, ms) => {
          const key = keys.reuseAnswer(questionKey);
          const value = (await c.get(key))!;
          const bar = value.indexOf('|');
          await c.set(key, `${Number(value.slice(0, bar)) - ms}${value.slice(bar)}`, 'KEEPTTL');
        },
      };
    },
  ],
];

const Q = 'a'.repeat(64);
const FRESH: ReuseAllowance = { maxAgeMs: 60_000, staleMs: 0, join: true, lead: true };
const leader = (trackId: string = randomUUID()) => ({ trackId, deadlineMs: Date.now() + 30_000 });
const answer = (trackId: string) => ({ trackId, clientId: 'svc-a', data: { matched: true }, upstream: { code: 200 } });

describe.each(subjects)('%s answer store', (_name, make) => {
  it('a first lookup leads; its stored answer is a hit within max-age with its age, a miss beyond', async () => {
    const { store, age } = make();
    const first = leader();
    expect(await store.lookupOrJoin(Q, 'standard', FRESH, first)).toEqual({
      result: 'miss',
      leading: true,
      storedTooOld: false,
    });
    // Kept an hour (the operator's maxAgeSeconds); the caller allows a minute.
    const { completedAtMs } = await store.store(Q, 'standard', answer(first.trackId), 3_600);
    const hit = await store.lookupOrJoin(Q, 'advanced', FRESH, leader());
    expect(hit).toEqual({
      result: 'hit',
      answer: { ...answer(first.trackId), completedAtMs },
      ageMs: expect.any(Number),
    });
    expect(hit.result === 'hit' && hit.ageMs).toBeLessThan(1_000);
    await age(Q, 60_000 + 1_000);
    const late = leader();
    expect(await store.lookupOrJoin(Q, 'standard', FRESH, late)).toEqual({
      result: 'miss',
      leading: true,
      storedTooOld: true,
    });
    // max-age=0 never reuses a stored answer; within stale-if-error it comes beside the miss.
    const stale = await store.lookupOrJoin(
      Q,
      'advanced',
      { maxAgeMs: 0, staleMs: 120_000, join: true, lead: true },
      leader(),
    );
    expect(stale).toMatchObject({
      result: 'miss',
      leading: true,
      storedTooOld: true,
      stale: { answer: { trackId: first.trackId } },
    });
    expect(stale.result === 'miss' && stale.stale!.ageMs).toBeGreaterThanOrEqual(61_000);
  });

  it('joins an identical inquiry in flight (same handling only), for one lease; no-join and no-lead callers do neither', async () => {
    const { store } = make();
    const first = leader();
    await store.lookupOrJoin(Q, 'standard', FRESH, first);
    const joined = await store.lookupOrJoin(Q, 'standard', FRESH, leader());
    expect(joined).toEqual({ result: 'join', leader: { trackId: first.trackId, leaseEndsMs: expect.any(Number) } });
    const leaseEnd = Date.now() + LEADER_LEASE_MS;
    expect(joined.result === 'join' && Math.abs(joined.leader.leaseEndsMs - leaseEnd)).toBeLessThan(1_000);
    expect(await store.lookupOrJoin(Q, 'advanced', FRESH, leader())).toMatchObject({ result: 'miss', leading: true });
    expect(await store.lookupOrJoin(Q, 'standard', { ...FRESH, join: false }, leader())).toEqual({
      result: 'miss',
      leading: false,
      storedTooOld: false,
    });
    const other = 'b'.repeat(64);
    expect(await store.lookupOrJoin(other, 'standard', { ...FRESH, lead: false }, leader())).toMatchObject({
      leading: false,
    });
    expect(await store.lookupOrJoin(other, 'standard', FRESH, leader())).toMatchObject({
      result: 'miss',
      leading: true,
    });
  });

  it('renews only the leader’s own registration, never past its deadline; its lease left, 0 once gone', async () => {
    const { store } = make();
    const first = leader();
    await store.lookupOrJoin(Q, 'standard', FRESH, first);
    expect(await store.leaseLeft(Q, 'standard', first.trackId)).toBeGreaterThan(LEADER_LEASE_MS - 1_000);
    expect(await store.leaseLeft(Q, 'standard', randomUUID())).toBe(0);
    expect(await store.renew(Q, 'standard', randomUUID(), first.deadlineMs)).toBe(false);
    expect(await store.renew(Q, 'standard', first.trackId, Date.now() + 500)).toBe(true);
    const cut = await store.leaseLeft(Q, 'standard', first.trackId);
    expect(cut).toBeGreaterThan(0);
    // Cut to the deadline (the memory store's clock stands still, so a little over 500 there).
    expect(cut).toBeLessThan(LEADER_LEASE_MS - 1_000);
    expect(await store.release(Q, 'standard', first.trackId)).toBe(true);
    expect(await store.leaseLeft(Q, 'standard', first.trackId)).toBe(0);
    expect(await store.renew(Q, 'standard', first.trackId, first.deadlineMs)).toBe(false);
  });

  it('releases only the leader’s own registration, by release or by its store', async () => {
    const { store } = make();
    const first = leader();
    await store.lookupOrJoin(Q, 'standard', FRESH, first);
    expect(await store.release(Q, 'standard', randomUUID())).toBe(false);
    expect(await store.lookupOrJoin(Q, 'standard', FRESH, leader())).toMatchObject({ result: 'join' });
    expect(await store.release(Q, 'standard', first.trackId)).toBe(true);
    const second = leader();
    expect(await store.lookupOrJoin(Q, 'standard', { ...FRESH, maxAgeMs: 0 }, second)).toMatchObject({ leading: true });
    // Another inquiry's answer is kept, but the registration stays the second leader's.
    await store.store(Q, 'standard', answer(randomUUID()), 60);
    expect(await store.lookupOrJoin(Q, 'standard', { ...FRESH, maxAgeMs: 0 }, leader())).toMatchObject({
      result: 'join',
      leader: { trackId: second.trackId },
    });
    await store.store(Q, 'standard', answer(second.trackId), 60);
    expect(await store.lookupOrJoin(Q, 'standard', { ...FRESH, maxAgeMs: 0 }, leader())).toMatchObject({
      leading: true,
    });
  });
});

describe('redis answer store', () => {
  it('keeps an answer sealed, bound to its key, for maxAgeSeconds; the registration lives one lease', async () => {
    const c = redis.client();
    const keys = new RedisKeys('reuse-ttl');
    const store = new RedisAnswerStore(c, keys, new StoreCipher(ring('k1')));
    const first = { trackId: randomUUID(), deadlineMs: Date.now() + 20_000 };
    await store.lookupOrJoin(Q, 'standard', FRESH, first);
    const pttl = await c.pttl(keys.reuseInFlight(Q, 'standard'));
    expect(pttl).toBeGreaterThan(LEADER_LEASE_MS - 1_000);
    expect(pttl).toBeLessThanOrEqual(LEADER_LEASE_MS);
    await store.store(Q, 'standard', answer(first.trackId), 86_400);
    expect(await c.ttl(keys.reuseAnswer(Q))).toBe(86_400);
    const raw = (await c.get(keys.reuseAnswer(Q)))!;
    expect(raw).toMatch(/^\d{13}\|enc:v1:k1:/);
    expect(raw).not.toContain('matched');
    expect(await c.exists(keys.reuseInFlight(Q, 'standard'))).toBe(0);
  });

  it('an answer that cannot be opened (key rotated out, or moved to another question) is a miss, and the caller leads', async () => {
    const c = redis.client();
    const keys = new RedisKeys('reuse-rotation');
    await new RedisAnswerStore(c, keys, new StoreCipher(ring('old'))).store(Q, 'standard', answer(randomUUID()), 60);
    const rotated = new RedisAnswerStore(c, keys, new StoreCipher(ring('new')));
    expect(await rotated.lookupOrJoin(Q, 'standard', { ...FRESH, staleMs: 60_000 }, leader())).toEqual({
      result: 'miss',
      leading: true,
      storedTooOld: false,
    });
    const cipher = new StoreCipher(ring('k'));
    const store = new RedisAnswerStore(c, new RedisKeys('reuse-moved'), cipher);
    await store.store(Q, 'standard', answer(randomUUID()), 60);
    const other = 'c'.repeat(64);
    const moved = (await c.get(new RedisKeys('reuse-moved').reuseAnswer(Q)))!;
    await c.set(new RedisKeys('reuse-moved').reuseAnswer(other), moved);
    expect(await store.lookupOrJoin(other, 'standard', FRESH, leader())).toMatchObject({
      result: 'miss',
      leading: true,
    });
  });

  it('50 concurrent lookups of one question over 3 connections: exactly one leads, the 49 others join it', async () => {
    const keys = new RedisKeys('reuse-race');
    const cipher = new StoreCipher(ring('k1'));
    const clients = [0, 1, 2].map(() => redis.client());
    const stores = clients.map((c) => new RedisAnswerStore(c, keys, cipher));
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => stores[i % 3].lookupOrJoin(Q, 'standard', FRESH, leader(`t-${i}`))),
    );
    const leaders = results.filter((r) => r.result === 'miss' && r.leading);
    expect(leaders).toHaveLength(1);
    const joins = results.filter((r) => r.result === 'join');
    expect(joins).toHaveLength(49);
    const led = await clients[2].get(keys.reuseInFlight(Q, 'standard'));
    for (const join of joins) expect(join.result === 'join' && join.leader.trackId).toBe(led);
  });
});
