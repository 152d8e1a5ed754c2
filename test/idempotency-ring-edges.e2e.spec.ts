/**
 * Edges of an end user's Idempotency-Key claimed under every key of the subject hash ring a
 * replica holds (SubjectHasher.claimHashes): replicas holding different subsets of the ring at
 * once, claims whose request died, an answer stored under one name only, and the single-node
 * store. The question each time: is one key ever sent upstream twice, or an answer lost or
 * changed? Real gateways on one real redis-server; the upstream simulator counts the calls.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { sha256 } from '../src/crypto/sha256.js';
import { SubjectHasher } from '../src/crypto/subject-hash.js';
import { EndUser, type EndUserAnswer } from './support/end-user.js';
import { nextEvent } from './support/events.js';
import { SHAHKAR } from './support/fixtures.js';
import { startGateway, type RunningGateway } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import {
  CHECK_SHAHKAR_PATH,
  SANDBOX_INPUT_OUTCOMES,
  UpstreamSimulator,
} from './upstream-simulator/upstream-simulator.js';

const SUBJECT = 'user-0499370899';
const PREFIX = 'ring';
const CLIENT = 'jwt:mobile-app';

let redis: RedisServer;
let probe: Redis;
let sim: UpstreamSimulator;
let user: EndUser;
let common: Record<string, string>;

beforeAll(async () => {
  [redis, user] = await Promise.all([RedisServer.start(), EndUser.create(SUBJECT)]);
  probe = new Redis(redis.url);
  // The sandbox's scripted inputs: 0499370910 makes every supplier fail (an upstream failure).
  sim = new UpstreamSimulator({ inputOutcomes: SANDBOX_INPUT_OUTCOMES });
  await sim.start();
  common = {
    UPSTREAM_BASE_URL: sim.baseUrl,
    // Lease = 10 timeouts + 30 s: a claim aged a minute and more belongs to a request that died.
    UPSTREAM_TIMEOUT_MS: '1000',
    ...(await user.gatewayEnv()),
  };
});
afterAll(async () => {
  probe?.disconnect();
  await sim?.stop();
  await redis?.stop();
});

const inquire = (gateway: RunningGateway, key: string, body?: unknown): Promise<EndUserAnswer> =>
  user.inquire(gateway, key, body);

const base64Key = () => randomBytes(32).toString('base64');
const reveal = (key: string) => ({ key: { reveal: () => key } });
/** The user's claim name under a SUBJECT_HASH_KEYS key, or under the key derived from a store key. */
const nameUnder = (key: string, derived = false) => {
  const hasher = derived ? new SubjectHasher([], [reveal(key)]) : new SubjectHasher([reveal(key)]);
  return `${CLIENT.length}:${CLIENT}:u:${hasher.hash(SUBJECT).slice(0, 32)}`;
};
const claimKey = (scope: string, key: string) => `{${PREFIX}:idem:${scope}:${sha256(key)}}`;
/** A fresh key whose claim name sorts before (or after) `other`'s: which name every replica claims first. */
function keySorted(other: string, before: boolean): string {
  for (;;) {
    const key = base64Key();
    if (nameUnder(key) < other === before) return key;
  }
}

interface StoredClaim {
  trackId: string;
  fingerprint: string;
  state: string;
  claimedAt: number;
  response?: unknown;
}

/** Ages the claim under `scope` (plain JSON: no STORE_ENCRYPTION_KEYS) as one made `ageMs` ago; optionally drops its answer. */
async function ageClaim(scope: string, key: string, ageMs: number, dropAnswer = false): Promise<StoredClaim> {
  const stored = JSON.parse((await probe.get(claimKey(scope, key)))!) as StoredClaim;
  const aged = {
    ...stored,
    claimedAt: Date.now() - ageMs,
    ...(dropAnswer ? { state: 'in_flight', response: undefined } : {}),
  };
  await probe.set(claimKey(scope, key), JSON.stringify(aged), 'KEEPTTL');
  return stored;
}

/** Ages a record as written `ageMs` ago: its deadline is what marks a pending request dead. */
async function ageRecord(trackId: string, ageMs: number): Promise<void> {
  const recordKey = `{${PREFIX}:inq:${trackId}}`;
  const record = JSON.parse((await probe.get(recordKey))!) as { createdAt: string; deadlineAt?: string };
  const earlier = (iso: string) => new Date(Date.parse(iso) - ageMs).toISOString();
  const aged = {
    ...record,
    createdAt: earlier(record.createdAt),
    ...(record.deadlineAt ? { deadlineAt: earlier(record.deadlineAt) } : {}),
  };
  await probe.set(recordKey, JSON.stringify(aged), 'KEEPTTL');
}

describe('SUBJECT_HASH_KEYS set for the first time during a store key rotation: many requests at once', () => {
  it('20 requests with one key across replicas holding [D1], [N, D1] and [N, D1, D2]: one upstream call, each other 409 or its replay', async () => {
    const [s1, s2] = [base64Key(), base64Key()];
    // The new key's name sorts first: the replicas holding it claim it before the name all share.
    const subjectKey = keySorted(nameUnder(s1, true), true);
    const gateways = await Promise.all([
      startGateway({ ...common, REDIS_URL: redis.url, REDIS_KEY_PREFIX: PREFIX, STORE_ENCRYPTION_KEYS: `s1:${s1}` }),
      startGateway({
        ...common,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: PREFIX,
        STORE_ENCRYPTION_KEYS: `s1:${s1}`,
        SUBJECT_HASH_KEYS: `n:${subjectKey}`,
      }),
      startGateway({
        ...common,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: PREFIX,
        STORE_ENCRYPTION_KEYS: `s1:${s1},s2:${s2}`,
        SUBJECT_HASH_KEYS: `n:${subjectKey}`,
      }),
    ]);
    try {
      sim.setLatency(300);
      const calls = sim.inquiryCalls;
      const key = `crowd-${randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, at) => inquire(gateways[at % 3], key)));
      const sent = answers.filter((answer) => answer.status === 200 && answer.replayed === null);
      expect(sent).toHaveLength(1);
      expect(sim.inquiryCalls - calls).toBe(1);
      for (const answer of answers) {
        if (answer === sent[0]) continue;
        if (answer.status === 200)
          expect(answer).toMatchObject({ replayed: 'true', body: { trackId: sent[0].body.trackId } });
        else expect(answer).toMatchObject({ status: 409, body: { code: 'idempotency_key_in_use' } });
      }
      sim.setLatency(0);
      // At once: a retry claims the name it holds first (empty when the first ran on [D1]) before
      // it meets the answer, and another retry meeting that claim must still get the answer.
      for (const retry of await Promise.all(gateways.map((gateway) => inquire(gateway, key))))
        expect(retry).toMatchObject({ status: 200, replayed: 'true', body: { trackId: sent[0].body.trackId } });
      expect(sim.inquiryCalls - calls).toBe(1);
      expect(sim.chargeCount(sent[0].body.trackId)).toBe(1);
    } finally {
      sim.setLatency(0);
      await Promise.all(gateways.map((gateway) => gateway.close()));
    }
  });
});

describe('replicas holding [A], [A, B] and [A, B, C] of SUBJECT_HASH_KEYS (claims readable: no store encryption)', () => {
  // A's name sorts before B's, B's before C's: the order every replica claims them in.
  let A: string, B: string, C: string;
  let one: RunningGateway, two: RunningGateway, three: RunningGateway;
  const names = () => [nameUnder(A), nameUnder(B), nameUnder(C)];

  beforeAll(async () => {
    C = base64Key();
    B = keySorted(nameUnder(C), true);
    A = keySorted(nameUnder(B), true);
    const env = { ...common, REDIS_URL: redis.url, REDIS_KEY_PREFIX: PREFIX };
    [one, two, three] = await Promise.all([
      startGateway({ ...env, SUBJECT_HASH_KEYS: `a:${A}` }),
      startGateway({ ...env, SUBJECT_HASH_KEYS: `b:${B},a:${A}` }),
      startGateway({ ...env, SUBJECT_HASH_KEYS: `c:${C},b:${B},a:${A}` }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close(), three?.close()]);
  });

  it('a request that died in flight after claiming all three names: each replica concludes it 504 at once, none sends it again', async () => {
    sim.injectFault({ kind: 'hang', path: CHECK_SHAHKAR_PATH });
    const hung = nextEvent(sim, 'fault');
    const key = `died-${randomUUID()}`;
    const first = inquire(three, key);
    await hung;
    const calls = sim.inquiryCalls;
    const claims = await Promise.all(names().map((scope) => ageClaim(scope, key, 120_000)));
    const { trackId } = claims[0];
    expect(claims.map((claim) => claim.trackId)).toEqual([trackId, trackId, trackId]);
    await ageRecord(trackId, 120_000);

    const retries = await Promise.all([inquire(one, key), inquire(two, key), inquire(three, key)]);
    for (const retry of retries)
      expect(retry).toMatchObject({ status: 504, replayed: 'true', body: { code: 'upstream_timeout', trackId } });
    expect(new Set(retries.map((retry) => JSON.stringify(retry.body))).size).toBe(1);
    // The hung original ends by itself; its answer, and every later one, is that conclusion.
    expect((await first).status).toBe(504);
    for (const retry of await Promise.all([inquire(one, key), inquire(two, key), inquire(three, key)]))
      expect(retry).toMatchObject({ status: 504, body: { trackId } });
    expect(sim.inquiryCalls).toBe(calls);
  });

  it('a claim orphaned under all three names before anything was sent: the retry is sent at once, once, and replayed everywhere', async () => {
    // The fingerprint of this request, as a claim made for it stores it.
    const donor = `donor-${randomUUID()}`;
    expect((await inquire(three, donor)).status).toBe(200);
    const { fingerprint } = JSON.parse((await probe.get(claimKey(nameUnder(A), donor)))!) as StoredClaim;
    const key = `orphan-${randomUUID()}`;
    const orphan = { trackId: randomUUID(), fingerprint, state: 'in_flight', claimedAt: Date.now() - 600_000 };
    for (const scope of names()) await probe.set(claimKey(scope, key), JSON.stringify(orphan), 'EX', 3600);
    const calls = sim.inquiryCalls;

    const retried = await inquire(three, key);
    expect(retried).toMatchObject({ status: 200, replayed: null });
    expect(retried.body.trackId).not.toBe(orphan.trackId);
    for (const again of await Promise.all([inquire(one, key), inquire(two, key), inquire(three, key)]))
      expect(again).toMatchObject({ status: 200, replayed: 'true', body: { trackId: retried.body.trackId } });
    expect(sim.inquiryCalls - calls).toBe(1);
  });

  it("an answer stored under B only, its writer dead (A's write lost): every replica replays what the caller got", async () => {
    // An upstream failure: its answer is not in the record, only in the claim (a conclusion from
    // the record would be a different one).
    const key = `half-${randomUUID()}`;
    const calls = sim.inquiryCalls;
    const first = await inquire(two, key, { ...SHAHKAR, nationalCode: '0499370910' });
    expect(first).toMatchObject({ status: 502, body: { code: 'upstream_error' } });
    expect(JSON.parse((await probe.get(claimKey(nameUnder(A), key)))!)).toMatchObject({ state: 'done' });
    const { trackId } = await ageClaim(nameUnder(A), key, 120_000, true);
    await ageClaim(nameUnder(B), key, 120_000);
    await ageRecord(trackId, 120_000);

    const fromBoth = await inquire(two, key, { ...SHAHKAR, nationalCode: '0499370910' });
    expect(fromBoth).toMatchObject({ status: first.status, replayed: 'true', body: first.body });
    // The replica holding A alone sees it too once a replica holding both has met it.
    const fromA = await inquire(one, key, { ...SHAHKAR, nationalCode: '0499370910' });
    expect(fromA).toMatchObject({ status: first.status, replayed: 'true', body: first.body });
    expect(sim.inquiryCalls - calls).toBe(1);
  });
});

describe('the single-node store (no REDIS_URL: claims in the embedded PGlite) with both rings set', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'vgw-ring-edges-'));
  });
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('a keyed retry after a restart is a replay, also with a key added to SUBJECT_HASH_KEYS meanwhile', async () => {
    const env = {
      ...common,
      LEDGER_DATABASE_URL: '',
      LEDGER_DATA_DIR: join(scratch, 'data'),
      STORE_ENCRYPTION_KEYS: `s1:${base64Key()}`,
      SUBJECT_HASH_KEYS: `n:${base64Key()}`,
    };
    const calls = sim.inquiryCalls;
    const before = await startGateway(env);
    let first: EndUserAnswer;
    try {
      first = await inquire(before, 'single-node-1');
      expect(first.status).toBe(200);
    } finally {
      await before.close();
    }
    // The first step of a rotation: a new key added second (the claim is under both names it held).
    const after = await startGateway({ ...env, SUBJECT_HASH_KEYS: `${env.SUBJECT_HASH_KEYS},m:${base64Key()}` });
    try {
      expect(await inquire(after, 'single-node-1')).toMatchObject({
        status: 200,
        replayed: 'true',
        body: { trackId: first.body.trackId },
      });
      expect((await inquire(after, 'single-node-1', { ...SHAHKAR, mobileNumber: '09120000000' })).status).toBe(422);
    } finally {
      await after.close();
    }
    expect(sim.inquiryCalls - calls).toBe(1);
  });
});
