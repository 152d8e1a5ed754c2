/**
 * The Idempotency-Key decisions (docs/api.md §2, "Idempotency") against the in-process
 * stores: claim, replay, in use, reused, the conclusion of an abandoned claim, release and
 * complete. No Redis, no HTTP.
 */
import { beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { callerScopes, type Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { Secret } from '../config/secret.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException, type ProblemBody } from '../problem/problem.js';
import {
  IdempotencyService,
  SETTLED_ANSWER_GRACE_MS,
  msUntilSettledAnswerDue,
  type ClaimResult,
  type HeldKey,
} from './idempotency.service.js';
import { sha256 } from '../crypto/sha256.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { UpstreamSuccess } from '../upstream/upstream.client.js';
import type { InquiryRecord, StoredResponse } from './inquiry-record.js';
import { successOutcome } from './inquiry-outcome.js';
import { MemoryIdempotencyStore, MemoryInquiryStore } from './memory-inquiry.store.js';

const TIMEOUT_MS = 1000;
/** 10 timeouts + 30 s: after this an in-flight claim belongs to a request that died. */
const LEASE_MS = TIMEOUT_MS * 10 + 30_000;
const CALLER: Caller = { clientId: 'app-a', scopes: [] } as unknown as Caller;
const FINGERPRINT = 'f'.repeat(64);
const T1 = '00000000-0000-4000-8000-000000000001';
const T2 = '00000000-0000-4000-8000-000000000002';
const T3 = '00000000-0000-4000-8000-000000000003';

const ANSWER: StoredResponse = { status: 200, contentType: 'application/json', trackId: T1, body: { trackId: T1 } };

function held(result: ClaimResult): HeldKey {
  if (!('held' in result)) throw new Error('expected the key to be claimed');
  return result.held;
}

async function problemOf(promise: Promise<unknown>): Promise<ProblemException> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof ProblemException)) throw new Error(`expected a problem, got ${String(error)}`);
  return error;
}

describe('IdempotencyService', () => {
  let claims: MemoryIdempotencyStore;
  let records: MemoryInquiryStore;
  let metrics: GatewayMetrics;
  let service: IdempotencyService;
  let now: number;

  const replays = async () => (await metrics.idempotentReplays.get()).values[0]?.value ?? 0;
  const record = (trackId: string, status: InquiryRecord['status'], data?: unknown): InquiryRecord => ({
    trackId,
    clientId: CALLER.clientId,
    operation: 'shahkar',
    requestHandlingType: 'standard',
    fingerprint: FINGERPRINT,
    status,
    createdAt: new Date(0).toISOString(),
    ...(data !== undefined ? { data } : {}),
  });
  /** A claim made by T1 that is older than the lease. */
  async function abandonedClaim(): Promise<void> {
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now - LEASE_MS - 1);
    try {
      held(await service.claim(CALLER, 'key', T1, FINGERPRINT));
    } finally {
      clock.mockRestore();
    }
  }

  // The conclusions log warnings by design; not on the test console.
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  beforeEach(() => {
    claims = new MemoryIdempotencyStore();
    records = new MemoryInquiryStore();
    metrics = new GatewayMetrics();
    const config = new ConfigService<AppConfig, true>({
      idempotency: { ttlSeconds: 3600 },
      upstream: { timeoutMs: TIMEOUT_MS },
    });
    service = new IdempotencyService(config, claims, records, metrics, new SubjectHasher([]));
    now = Date.now();
  });

  it('the first request with a key claims it', async () => {
    const key = held(await service.claim(CALLER, 'key', T1, FINGERPRINT));
    expect(key.claim).toMatchObject({ trackId: T1, fingerprint: FINGERPRINT, state: 'in_flight' });
  });

  it('a repeat while the first is in flight is 409 idempotency_key_in_use, naming its trackId', async () => {
    await service.claim(CALLER, 'key', T1, FINGERPRINT);
    const problem = await problemOf(service.claim(CALLER, 'key', T2, FINGERPRINT));
    expect(problem.toBody()).toMatchObject({ status: 409, code: 'idempotency_key_in_use', trackId: T1 });
  });

  it('the same key with a different request is 422 idempotency_key_reused', async () => {
    await service.claim(CALLER, 'key', T1, FINGERPRINT);
    const problem = await problemOf(service.claim(CALLER, 'key', T2, 'e'.repeat(64)));
    expect(problem.toBody()).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
  });

  it('a completed key replays the stored answer and counts the replay', async () => {
    await service.complete(held(await service.claim(CALLER, 'key', T1, FINGERPRINT)), ANSWER);
    expect(await service.claim(CALLER, 'key', T2, FINGERPRINT)).toEqual({ replay: ANSWER });
    expect(await replays()).toBe(1);
  });

  it("a repeat met under the caller's only name releases nothing: it holds nothing to free", async () => {
    await service.complete(held(await service.claim(CALLER, 'key', T1, FINGERPRINT)), ANSWER);
    const release = jest.spyOn(claims, 'release');
    expect(await service.claim(CALLER, 'key', T2, FINGERPRINT)).toEqual({ replay: ANSWER });
    await problemOf(service.claim(CALLER, 'key', T3, 'e'.repeat(64)));
    expect(release).not.toHaveBeenCalled();
  });

  it('a released key is claimed afresh by the next request', async () => {
    await service.release(held(await service.claim(CALLER, 'key', T1, FINGERPRINT)));
    expect(held(await service.claim(CALLER, 'key', T2, FINGERPRINT)).claim.trackId).toBe(T2);
  });

  it('keys are per client and per end user', async () => {
    await service.claim(CALLER, 'key', T1, FINGERPRINT);
    const other = { ...CALLER, clientId: 'app-b' };
    const user = { ...CALLER, subject: 'user-1' } as Caller;
    expect(held(await service.claim(other, 'key', T2, FINGERPRINT)).scopes).toEqual(['5:app-b']);
    const userKey = held(await service.claim(user, 'key', T3, FINGERPRINT));
    expect(userKey.scopes).toHaveLength(1);
    expect(userKey.scopes[0]).toMatch(/^5:app-a:u:[0-9a-f]{32}$/);
    expect(userKey.scopes[0]).not.toContain('user-1');
  });

  it('only the request holding the claim completes or releases it', async () => {
    const first = held(await service.claim(CALLER, 'key', T1, FINGERPRINT));
    await service.complete({ ...first, claim: { ...first.claim, trackId: T2 } }, ANSWER);
    await service.release({ ...first, claim: { ...first.claim, trackId: T2 } });
    const problem = await problemOf(service.claim(CALLER, 'key', T3, FINGERPRINT));
    expect(problem.code).toBe('idempotency_key_in_use');
  });

  describe('an in-flight claim older than the lease (its request died)', () => {
    it('without a record, nothing was sent: the claim is released and the new request claims it', async () => {
      await abandonedClaim();
      expect(held(await service.claim(CALLER, 'key', T2, FINGERPRINT)).claim.trackId).toBe(T2);
    });

    it("with a waiter's pending record (joined, nothing sent): the claim is released, the record left as it is", async () => {
      await abandonedClaim();
      await records.createJoined({ ...record(T1, 'pending'), joined: true }, 3600);
      expect(held(await service.claim(CALLER, 'key', T2, FINGERPRINT)).claim.trackId).toBe(T2);
      expect((await records.get(T1))?.status).toBe('pending');
    });

    it('with a succeeded record, the answer is rebuilt from it and kept for later retries', async () => {
      await abandonedClaim();
      await records.create(record(T1, 'succeeded', { isMatch: true }), 3600);
      const expected = {
        status: 200,
        trackId: T1,
        body: { trackId: T1, status: 'succeeded', data: { isMatch: true } },
      };
      expect(await service.claim(CALLER, 'key', T2, FINGERPRINT)).toMatchObject({ replay: expected });
      expect(await service.claim(CALLER, 'key', T3, FINGERPRINT)).toMatchObject({ replay: expected });
    });

    it('with a failed record, the answer is 502 upstream_error', async () => {
      await abandonedClaim();
      await records.create(record(T1, 'failed'), 3600);
      const result = await service.claim(CALLER, 'key', T2, FINGERPRINT);
      expect('replay' in result && (result.replay.body as ProblemBody)).toMatchObject({
        status: 502,
        code: 'upstream_error',
        trackId: T1,
      });
      expect((await records.get(T1))?.status).toBe('failed');
    });

    it('with a pending record, it may have been charged: 504 upstream_timeout and the record unknown', async () => {
      await abandonedClaim();
      await records.create(record(T1, 'pending'), 3600);
      const result = await service.claim(CALLER, 'key', T2, FINGERPRINT);
      expect('replay' in result && result.replay).toMatchObject({ status: 504, trackId: T1 });
      expect('replay' in result && (result.replay.body as ProblemBody).code).toBe('upstream_timeout');
      expect((await records.get(T1))?.status).toBe('unknown');
    });
  });

  it('abandoned claims found round after round: 503 store_unavailable, never a 409 without a trackId', async () => {
    // Every claim finds another claim that looks abandoned (a replica's clock far behind).
    claims.claim = () => Promise.resolve({ trackId: T3, fingerprint: FINGERPRINT, state: 'in_flight', claimedAt: 0 });
    const problem = await problemOf(service.claim(CALLER, 'key', T2, FINGERPRINT));
    expect(problem.toBody()).toMatchObject({ status: 503, code: 'store_unavailable' });
  });

  describe("a settled record whose answer is not stored yet (the writer's complete() owed)", () => {
    // What the first caller got: upstream 400, 422 upstream_rejected, the record `failed`.
    const REJECTED: StoredResponse = {
      status: 422,
      contentType: 'application/problem+json',
      trackId: T1,
      body: { code: 'upstream_rejected', status: 422, trackId: T1 },
    };
    /** T1's claim in flight, its record settled `status` (with the grace already spent). */
    async function settledUnanswered(status: InquiryRecord['status'], data?: unknown): Promise<HeldKey> {
      const key = held(await service.claim(CALLER, 'key', T1, FINGERPRINT));
      const completedAt = new Date(now - SETTLED_ANSWER_GRACE_MS - 1_000).toISOString();
      await records.create({ ...record(T1, status, data), completedAt }, 3600);
      return key;
    }

    it('a failure is never answered from the record: in use until the exact answer is stored, then replayed', async () => {
      const writer = await settledUnanswered('failed');
      expect((await problemOf(service.claim(CALLER, 'key', T2, FINGERPRINT))).code).toBe('idempotency_key_in_use');
      await service.complete(writer, REJECTED);
      expect(await service.claim(CALLER, 'key', T3, FINGERPRINT)).toEqual({ replay: REJECTED });
    });

    it('a failure that charged nothing (503, key released) lets the next retry claim afresh', async () => {
      const writer = await settledUnanswered('failed');
      expect((await problemOf(service.claim(CALLER, 'key', T2, FINGERPRINT))).code).toBe('idempotency_key_in_use');
      await service.release(writer);
      expect(held(await service.claim(CALLER, 'key', T3, FINGERPRINT)).claim.trackId).toBe(T3);
    });

    it('a success is rebuilt after the grace exactly as the first caller got it', async () => {
      const data = { isMatch: true };
      const writer = await settledUnanswered('succeeded', data);
      const first: StoredResponse = {
        ...successOutcome(T1, { data, meta: { code: 0, message: 'ok' } } as unknown as UpstreamSuccess).response,
        trackId: T1,
      };
      expect(await service.claim(CALLER, 'key', T2, FINGERPRINT)).toEqual({ replay: first });
      await service.complete(writer, first); // the owed complete() lands late: refused, same answer anyway
      expect(await service.claim(CALLER, 'key', T3, FINGERPRINT)).toEqual({ replay: first });
    });

    it("a conclusion that loses to the writer's complete() answers with the stored answer", async () => {
      await abandonedClaim();
      await records.create(record(T1, 'failed'), 3600);
      // The claim as its writer holds it (claiming an existing key returns it, unchanged).
      const writer: HeldKey = {
        scopes: ['5:app-a'],
        keySha256: sha256('key'),
        claim: (await claims.claim('5:app-a', sha256('key'), {} as never, 1))!,
      };
      const get = records.get.bind(records);
      let reads = 0;
      jest.spyOn(records, 'get').mockImplementation(async (id: string) => {
        // The owed complete() lands between answerRepeat's read and concludeAbandoned's.
        if (++reads === 2) await service.complete(writer, REJECTED);
        return get(id);
      });
      expect(await service.claim(CALLER, 'key', T2, FINGERPRINT)).toEqual({ replay: REJECTED });
      expect(await service.claim(CALLER, 'key', T3, FINGERPRINT)).toEqual({ replay: REJECTED });
    });

    it('a conclusion the store refuses is a store failure, never an answer stored from an unwritten state', async () => {
      await abandonedClaim();
      await records.create(record(T1, 'pending'), 3600);
      records.concludeUnknown = () => Promise.reject(new StoreUnavailableError('inquiry conclude'));
      await expect(service.claim(CALLER, 'key', T2, FINGERPRINT)).rejects.toBeInstanceOf(StoreUnavailableError);
      expect((await claims.claim('5:app-a', sha256('key'), {} as never, 1))?.state).toBe('in_flight');
    });
  });

  it('a claim inside the lease is still in flight, never concluded', async () => {
    await service.claim(CALLER, 'key', T1, FINGERPRINT);
    await records.create(record(T1, 'pending'), 3600);
    expect((await problemOf(service.claim(CALLER, 'key', T2, FINGERPRINT))).code).toBe('idempotency_key_in_use');
    expect((await records.get(T1))?.status).toBe('pending');
  });
});

/**
 * A claim made under every key of the subject hash ring a replica holds (issue 43): replicas
 * holding different subsets of the ring (mid-rollout) share one store here, each a service with
 * its own SubjectHasher. The question is always: sent twice, or an answer lost or stranded?
 */
describe('IdempotencyService across a subject hash ring (several names per claim)', () => {
  const USER = { clientId: 'app-a', subject: 'user-1', scopes: [] } as unknown as Caller;
  const ringKey = (fill: number) => ({ key: new Secret(Buffer.alloc(32, fill).toString('base64')) });
  const config = new ConfigService<AppConfig, true>({
    idempotency: { ttlSeconds: 3600 },
    upstream: { timeoutMs: TIMEOUT_MS },
  });
  let claims: MemoryIdempotencyStore;
  let records: MemoryInquiryStore;
  /** A replica holding these keys of the ring (fills of 32-byte keys), on the shared stores. */
  const replica = (...fills: number[]) =>
    new IdempotencyService(config, claims, records, new GatewayMetrics(), new SubjectHasher(fills.map(ringKey)));
  /** The claim's name under each key, as the service names it. */
  const nameUnder = (fill: number) =>
    callerScopes(USER, new SubjectHasher([ringKey(fill)]).claimHashes(USER.subject!))[0];
  const K = sha256('key');
  const record = (
    trackId: string,
    status: InquiryRecord['status'],
    extra: Partial<InquiryRecord> = {},
  ): InquiryRecord => ({
    trackId,
    clientId: USER.clientId,
    operation: 'shahkar',
    requestHandlingType: 'standard',
    fingerprint: FINGERPRINT,
    status,
    createdAt: new Date(0).toISOString(),
    ...extra,
  });
  /** A claim under each of these names by `trackId`, made longer than the lease ago (its request died). */
  async function orphan(trackId: string, fills: number[]): Promise<void> {
    const claim = {
      trackId,
      fingerprint: FINGERPRINT,
      state: 'in_flight' as const,
      claimedAt: Date.now() - LEASE_MS - 1,
    };
    for (const fill of fills) expect(await claims.claim(nameUnder(fill), K, claim, 3600)).toBeNull();
  }

  beforeAll(() => {
    Logger.overrideLogger(false);
  });
  beforeEach(() => {
    claims = new MemoryIdempotencyStore();
    records = new MemoryInquiryStore();
  });

  it('a claim refused under its second name lets go of the first: the retry claims afresh, never 409', async () => {
    const both = replica(1, 2);
    const [first, second] = [nameUnder(1), nameUnder(2)].sort();
    const claim = claims.claim.bind(claims);
    let refused = 0;
    jest.spyOn(claims, 'claim').mockImplementation((scope, ...rest) => {
      if (scope === second && refused++ === 0) return Promise.reject(new StoreUnavailableError('idempotency claim'));
      return claim(scope, ...rest);
    });
    await expect(both.claim(USER, 'key', T1, FINGERPRINT)).rejects.toBeInstanceOf(StoreUnavailableError);
    await new Promise((resolve) => setImmediate(resolve)); // the release is not waited for
    expect(await claims.peek(first, K)).toBeNull();
    expect(held(await both.claim(USER, 'key', T2, FINGERPRINT)).scopes).toEqual([first, second]);
  });

  it('an answer stored under one name only (the other write failed): no replica sends the retry; the owed write replays everywhere', async () => {
    const both = replica(1, 2);
    const [first, second] = [nameUnder(1), nameUnder(2)].sort();
    const onlyFirst = replica(first === nameUnder(1) ? 1 : 2);
    const onlySecond = replica(second === nameUnder(1) ? 1 : 2);
    const writer = held(await both.claim(USER, 'key', T1, FINGERPRINT));
    await records.create(record(T1, 'failed', { completedAt: new Date(Date.now() - 60_000).toISOString() }), 3600);
    const REJECTED: StoredResponse = {
      status: 422,
      contentType: 'application/problem+json',
      trackId: T1,
      body: { trackId: T1 },
    };
    const complete = claims.complete.bind(claims);
    const failing = jest
      .spyOn(claims, 'complete')
      .mockImplementation((scope, ...rest) =>
        scope === first ? Promise.reject(new StoreUnavailableError('idempotency complete')) : complete(scope, ...rest),
      );
    await expect(both.complete(writer, REJECTED)).rejects.toBeInstanceOf(StoreUnavailableError);
    failing.mockRestore();
    // Meanwhile: 409 naming the first where the name met first is still in flight, the answer
    // where it is stored; never a claim of its own (a second call).
    expect((await problemOf(onlyFirst.claim(USER, 'key', T2, FINGERPRINT))).toBody()).toMatchObject({
      code: 'idempotency_key_in_use',
      trackId: T1,
    });
    expect(await onlySecond.claim(USER, 'key', T2, FINGERPRINT)).toEqual({ replay: REJECTED });
    expect(await both.claim(USER, 'key', T2, FINGERPRINT).catch((error: unknown) => error)).not.toHaveProperty('held');
    // The owed write (Settlements retries the whole complete()) lands the missing name.
    await both.complete(writer, REJECTED);
    for (const service of [both, onlyFirst, onlySecond])
      expect(await service.claim(USER, 'key', T2, FINGERPRINT)).toEqual({ replay: REJECTED });
  });

  it("an answer stored under one name only and its writer dead: a replica holding that name replays it, never the record's conclusion", async () => {
    const both = replica(1, 2);
    const [first] = [nameUnder(1), nameUnder(2)].sort();
    const REJECTED: StoredResponse = {
      status: 422,
      contentType: 'application/problem+json',
      trackId: T1,
      body: { trackId: T1 },
    };
    // T1 died after storing its 422 under the second name only (the first name's write failed, never retried).
    await orphan(T1, [1, 2]);
    await records.create(record(T1, 'failed', { completedAt: new Date(Date.now() - LEASE_MS).toISOString() }), 3600);
    const other = [nameUnder(1), nameUnder(2)].find((name) => name !== first)!;
    expect(
      await claims.complete(other, K, { ...(await claims.peek(other, K))!, state: 'done', response: REJECTED }),
    ).toBe(true);
    // What the first caller got is what its retry gets, on a replica that can see it; and after
    // that on a replica holding the first name alone (it is stored there now too).
    expect(await both.claim(USER, 'key', T2, FINGERPRINT)).toEqual({ replay: REJECTED });
    expect(await replica(first === nameUnder(1) ? 1 : 2).claim(USER, 'key', T3, FINGERPRINT)).toEqual({
      replay: REJECTED,
    });
  });

  it('a claim orphaned under three names before anything was sent: the retry runs at once, not a 503', async () => {
    await orphan(T1, [1, 2, 3]);
    expect(held(await replica(1, 2, 3).claim(USER, 'key', T2, FINGERPRINT)).claim.trackId).toBe(T2);
  });

  it('a claim orphaned under three names after it was sent: concluded once, under every name the replica holds', async () => {
    await orphan(T1, [1, 2, 3]);
    await records.create(record(T1, 'pending'), 3600);
    expect(await replica(1, 2, 3).claim(USER, 'key', T2, FINGERPRINT)).toMatchObject({ replay: { status: 504 } });
    // A replica holding any one of them replays that answer, never concludes it again.
    for (const fill of [1, 2, 3])
      expect(await claims.peek(nameUnder(fill), K)).toMatchObject({ state: 'done', trackId: T1 });
  });

  it('a claim orphaned after its request was sent, found by replicas holding different names: one conclusion, the same answer', async () => {
    await orphan(T1, [1, 2]);
    await records.create(record(T1, 'pending'), 3600);
    const concluded = jest.spyOn(records, 'concludeUnknown');
    const answers = await Promise.all([
      replica(1, 2).claim(USER, 'key', T2, FINGERPRINT),
      replica(1).claim(USER, 'key', T3, FINGERPRINT),
      replica(2).claim(USER, 'key', '00000000-0000-4000-8000-000000000004', FINGERPRINT),
      replica(2, 1).claim(USER, 'key', '00000000-0000-4000-8000-000000000005', FINGERPRINT),
    ]);
    for (const answer of answers) expect(answer).toMatchObject({ replay: { status: 504, trackId: T1 } });
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect((await records.get(T1))?.status).toBe('unknown');
    // Each concluding replica found it pending or concluded; it was made unknown, never sent again.
    expect(concluded.mock.calls.length).toBeGreaterThanOrEqual(1);
    // Every name now holds the concluded answer.
    for (const fill of [1, 2])
      expect(await claims.peek(nameUnder(fill), K)).toMatchObject({ state: 'done', trackId: T1 });
  });

  it('a retry after the answer is stored replays it, though a latecomer holds the name met first (mid-rollout)', async () => {
    // T1 ran on a replica holding the second name alone and stored its answer there; X, a retry
    // on a replica holding both, has claimed the first name and not yet met that answer.
    const [first, second] = [nameUnder(1), nameUnder(2)].sort();
    const fillOf = (name: string) => (name === nameUnder(1) ? 1 : 2);
    const writer = held(await replica(fillOf(second)).claim(USER, 'key', T1, FINGERPRINT));
    await replica(fillOf(second)).complete(writer, ANSWER);
    const claim = claims.claim.bind(claims);
    let letX!: () => void;
    const xMayGoOn = new Promise<void>((resolve) => (letX = resolve));
    jest.spyOn(claims, 'claim').mockImplementation(async (scope, keySha256, made, ttl) => {
      if (scope === second && made.trackId === T2) await xMayGoOn;
      return claim(scope, keySha256, made, ttl);
    });
    const x = replica(1, 2).claim(USER, 'key', T2, FINGERPRINT);
    while (!(await claims.peek(first, K))) await new Promise((resolve) => setImmediate(resolve));
    // Not 409 naming X (never sent): the answer every retry gets; another request under the key
    // is refused as reused, as the first request's answer decides.
    expect(await replica(1, 2).claim(USER, 'key', T3, FINGERPRINT)).toEqual({ replay: ANSWER });
    expect((await problemOf(replica(1, 2).claim(USER, 'key', T3, 'e'.repeat(64)))).code).toBe('idempotency_key_reused');
    letX();
    expect(await x).toEqual({ replay: ANSWER });
  });

  it('a 409 names the request furthest along the names, not a latecomer bound to lose under a later one (mid-rollout)', async () => {
    // X holds both names and has won the first; Y (the second name only) has won the second: X
    // will meet Y there and let go, and Y alone is sent. W (both names) meets X first.
    const [first, second] = [nameUnder(1), nameUnder(2)].sort();
    const onlySecond = replica(second === nameUnder(1) ? 1 : 2);
    const claim = claims.claim.bind(claims);
    let letX!: () => void;
    const xMayGoOn = new Promise<void>((resolve) => (letX = resolve));
    jest.spyOn(claims, 'claim').mockImplementation(async (scope, keySha256, made, ttl) => {
      if (scope === second && made.trackId === T1) await xMayGoOn;
      return claim(scope, keySha256, made, ttl);
    });
    const x = replica(1, 2)
      .claim(USER, 'key', T1, FINGERPRINT)
      .catch((error: unknown) => error);
    while (!(await claims.peek(first, K))) await new Promise((resolve) => setImmediate(resolve));
    expect(held(await onlySecond.claim(USER, 'key', T3, FINGERPRINT)).claim.trackId).toBe(T3);
    // W's caller follows the trackId it is given (GET, or a respond-async wait): Y's, never X's.
    const w = await problemOf(replica(1, 2).claim(USER, 'key', T2, FINGERPRINT));
    expect(w.toBody()).toMatchObject({ code: 'idempotency_key_in_use', trackId: T3 });
    letX();
    expect(((await x) as ProblemException).toBody()).toMatchObject({ code: 'idempotency_key_in_use', trackId: T3 });
  });
  it('many requests at once on replicas holding [1], [1, 2] and [2, 1]: exactly one is held, each other a 409', async () => {
    const replicas = [replica(1), replica(1, 2), replica(2, 1)];
    const trackIds = Array.from({ length: 21 }, (_, at) => `00000000-0000-4000-8000-${String(at).padStart(12, '0')}`);
    const results = await Promise.allSettled(
      trackIds.map((trackId, at) => replicas[at % 3].claim(USER, 'key', trackId, FINGERPRINT)),
    );
    const winners = results.flatMap((result) =>
      result.status === 'fulfilled' && 'held' in result.value ? [result.value.held] : [],
    );
    expect(winners).toHaveLength(1);
    for (const result of results) {
      if (result.status === 'fulfilled') continue;
      expect((result.reason as ProblemException).toBody()).toMatchObject({ code: 'idempotency_key_in_use' });
    }
  });
});

describe('msUntilSettledAnswerDue (a timer fed by a stored time)', () => {
  it('is within [0, the grace], and 0 for a time that is missing or unreadable', () => {
    const now = Date.parse('2026-11-24T10:00:00Z');
    expect(msUntilSettledAnswerDue({ completedAt: new Date(now).toISOString() }, now)).toBe(SETTLED_ANSWER_GRACE_MS);
    expect(msUntilSettledAnswerDue({ completedAt: new Date(now + 86_400_000).toISOString() }, now)).toBe(
      SETTLED_ANSWER_GRACE_MS,
    );
    expect(msUntilSettledAnswerDue({ completedAt: new Date(now - 60_000).toISOString() }, now)).toBe(0);
    expect(msUntilSettledAnswerDue({ completedAt: 'not a time' }, now)).toBe(0);
    expect(msUntilSettledAnswerDue({}, now)).toBe(0);
  });
});
