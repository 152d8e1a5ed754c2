import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { RequestHandlingType } from '../upstream/inquiry-operation.js';
import {
  AnswerStore,
  leaseMs,
  type AgedAnswer,
  type AnswerToStore,
  type Leader,
  type ReuseAllowance,
  type ReuseLookup,
} from './answer-store.js';

/*
 * A stored answer is one string: `<completedAt ms on Redis TIME>|<sealed JSON>`. The time is in
 * clear so that the script can measure the age; the answer is sealed (StoreCipher, bound to the
 * key name). An inquiry in flight is a string holding its trackId, with a PX of one lease (renewed).
 * KEYS[1] the answer, KEYS[2] the inquiry in flight (same hash tag: one slot).
 */

/**
 * ARGV: maxAgeMs, staleMs, join (0|1), lead (0|1), ignoreStored (0|1), trackId, leaseMs.
 * Returns {'hit', value, age} | {'join', leader, pttl, staleValue|false, age} |
 * {'miss', leading, storedTooOld, staleValue|false, age}.
 */
const LOOKUP_OR_JOIN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxAge, stale = tonumber(ARGV[1]), tonumber(ARGV[2])
local stored, age = false, 0
if ARGV[5] == '0' then
  local value = redis.call('GET', KEYS[1])
  if value then
    local bar = string.find(value, '|', 1, true)
    local at = bar and tonumber(string.sub(value, 1, bar - 1))
    if at then
      stored, age = value, math.max(now - at, 0)
    end
  end
end
if stored and maxAge > 0 and age <= maxAge then return {'hit', stored, age} end
local staleValue = false
if stored and age <= maxAge + stale then staleValue = stored end
if ARGV[3] == '1' then
  local leader = redis.call('GET', KEYS[2])
  if leader then return {'join', leader, redis.call('PTTL', KEYS[2]), staleValue, age} end
end
local leading = 0
if ARGV[4] == '1' and redis.call('SET', KEYS[2], ARGV[6], 'NX', 'PX', ARGV[7]) then leading = 1 end
return {'miss', leading, stored and 1 or 0, staleValue, age}`;

/** ARGV: sealed answer, ttlSeconds, the leader's trackId. Returns the stamp (ms, Redis TIME). */
const STORE = `
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('SET', KEYS[1], now .. '|' .. ARGV[1], 'EX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return now`;

/** Deletes the registration in flight only if it is still this trackId's. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** ARGV: trackId, leaseMs. Extends the registration only if it is still this trackId's. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

/** ARGV: trackId. The registration's PTTL if it is still this trackId's, else 0. */
const LEASE_LEFT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return math.max(redis.call('PTTL', KEYS[1]), 0) end
return 0`;

type LookupReply = [string, string | number, string | number | null, string | null, number];

interface AnswerScripts {
  vgwReuseLookup(answer: string, flight: string, ...args: Array<string | number>): Promise<LookupReply>;
  vgwReuseStore(answer: string, flight: string, sealed: string, ttl: number, trackId: string): Promise<string>;
  vgwReuseRelease(flight: string, trackId: string): Promise<number>;
  vgwReuseRenew(flight: string, trackId: string, leaseMs: number): Promise<number>;
  vgwReuseLeaseLeft(flight: string, trackId: string): Promise<number>;
}

/**
 * The answer store on Redis: each operation is one script (EVALSHA), so a lookup that misses
 * and registers the caller as the inquiry in flight costs one round trip, and two replicas
 * asking at once cannot both lead (test/reuse-answer-store.integration.spec.ts, 'exactly one
 * leader'). Keys share the question's hash tag, so it works on Redis Cluster.
 */
export class RedisAnswerStore extends AnswerStore {
  private readonly scripts: AnswerScripts;

  constructor(
    client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
    private readonly now: () => number = Date.now,
  ) {
    super();
    client.defineCommand('vgwReuseLookup', { numberOfKeys: 2, lua: LOOKUP_OR_JOIN });
    client.defineCommand('vgwReuseStore', { numberOfKeys: 2, lua: STORE });
    client.defineCommand('vgwReuseRelease', { numberOfKeys: 1, lua: RELEASE });
    client.defineCommand('vgwReuseRenew', { numberOfKeys: 1, lua: RENEW });
    client.defineCommand('vgwReuseLeaseLeft', { numberOfKeys: 1, lua: LEASE_LEFT });
    this.scripts = client as unknown as AnswerScripts;
  }

  lookupOrJoin(
    questionKey: string,
    handling: RequestHandlingType,
    allowance: ReuseAllowance,
    leader: Leader,
  ): Promise<ReuseLookup> {
    return storeCall('reuse lookup', async () => {
      const first = await this.lookup(questionKey, handling, allowance, leader, false);
      if (first !== 'unopenable') return first;
      // The answer found cannot be opened (rotation, tampering): a miss, asked again without
      // it so that the caller may still join or lead. Rare: a second round trip only then.
      const again = await this.lookup(questionKey, handling, allowance, leader, true);
      return again === 'unopenable' ? { result: 'miss', leading: false, storedTooOld: false } : again;
    });
  }

  private async lookup(
    questionKey: string,
    handling: RequestHandlingType,
    allowance: ReuseAllowance,
    leader: Leader,
    ignoreStored: boolean,
  ): Promise<ReuseLookup | 'unopenable'> {
    const answerKey = this.keys.reuseAnswer(questionKey);
    const reply = await this.scripts.vgwReuseLookup(
      answerKey,
      this.keys.reuseInFlight(questionKey, handling),
      Math.max(0, Math.floor(allowance.maxAgeMs)),
      Math.max(0, Math.floor(allowance.staleMs)),
      allowance.join ? 1 : 0,
      allowance.lead ? 1 : 0,
      ignoreStored ? 1 : 0,
      leader.trackId,
      leaseMs(leader.deadlineMs, this.now()),
    );
    const [result] = reply;
    if (result === 'hit') {
      const aged = this.open(answerKey, String(reply[1]), Number(reply[2]));
      return aged ? { result: 'hit', ...aged } : 'unopenable';
    }
    const stale = reply[3] ? this.open(answerKey, reply[3], reply[4]) : undefined;
    const withStale = stale ? { stale } : {};
    if (result === 'join') {
      const remaining = Math.max(Number(reply[2]), 0);
      return {
        result: 'join',
        leader: { trackId: String(reply[1]), leaseEndsMs: this.now() + remaining },
        ...withStale,
      };
    }
    return { result: 'miss', leading: Number(reply[1]) === 1, storedTooOld: Number(reply[2]) === 1, ...withStale };
  }

  /** The stored value opened, or undefined when it cannot be (a miss, never an error). */
  private open(answerKey: string, value: string, ageMs: number): AgedAnswer | undefined {
    const bar = value.indexOf('|');
    const completedAtMs = Number(value.slice(0, bar));
    const opened = this.cipher.openOrUndefined(value.slice(bar + 1), answerKey);
    if (opened === undefined) return undefined;
    try {
      const answer = JSON.parse(opened) as AnswerToStore;
      return { answer: { ...answer, completedAtMs }, ageMs };
    } catch {
      return undefined;
    }
  }

  store(
    questionKey: string,
    handling: RequestHandlingType,
    answer: AnswerToStore,
    ttlSeconds: number,
  ): Promise<{ completedAtMs: number }> {
    return storeCall('reuse store', async () => {
      const answerKey = this.keys.reuseAnswer(questionKey);
      const kept: AnswerToStore = {
        trackId: answer.trackId,
        clientId: answer.clientId,
        data: answer.data,
        ...(answer.upstream ? { upstream: answer.upstream } : {}),
      };
      const stamp = await this.scripts.vgwReuseStore(
        answerKey,
        this.keys.reuseInFlight(questionKey, handling),
        this.cipher.seal(JSON.stringify(kept), answerKey),
        Math.max(1, Math.floor(ttlSeconds)),
        answer.trackId,
      );
      return { completedAtMs: Number(stamp) };
    });
  }

  release(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<boolean> {
    return storeCall('reuse release', async () => {
      return (await this.scripts.vgwReuseRelease(this.keys.reuseInFlight(questionKey, handling), trackId)) === 1;
    });
  }

  renew(questionKey: string, handling: RequestHandlingType, trackId: string, deadlineMs: number): Promise<boolean> {
    return storeCall('reuse renew', async () => {
      const flight = this.keys.reuseInFlight(questionKey, handling);
      return (await this.scripts.vgwReuseRenew(flight, trackId, leaseMs(deadlineMs, this.now()))) === 1;
    });
  }

  leaseLeft(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<number> {
    return storeCall('reuse lease', async () => {
      return Number(await this.scripts.vgwReuseLeaseLeft(this.keys.reuseInFlight(questionKey, handling), trackId));
    });
  }
}
