/**
 * An Idempotency-Key whose first request died in flight (its process crashed, or the store
 * failed just as it stored the answer) must not answer 409 for a whole day, and must never
 * be sent upstream again: once the in-flight lease is over, the answer is concluded from the
 * inquiry record, or the key released when there is no record (nothing was sent). A key whose
 * answer provably charged nothing is released too. Claims are aged in Redis to stand for the
 * passing time.
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { nextEvent } from './support/events.js';
import { TEST_CLIENTS, callGateway, startGateway, type RunningGateway, untilStarted } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';

const PREFIX = 'abandoned';

describe('abandoned in-flight Idempotency-Key', () => {
  let redis: RedisServer;
  let probe: Redis;
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;

  beforeAll(async () => {
    redis = await RedisServer.start();
    probe = new Redis(redis.url);
    sim = new UpstreamSimulator();
    await sim.start();
    // Lease = 6 x 1 s + 10 s.
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: PREFIX,
      UPSTREAM_TIMEOUT_MS: '1000',
    });
    await untilStarted(gateway.app);
  });
  afterAll(async () => {
    await gateway.close();
    await sim.stop();
    probe.disconnect();
    await redis.stop();
  });

  const post = (key: string) =>
    callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { 'idempotency-key': key },
    });
  const claimKey = (key: string) =>
    `{${PREFIX}:idem:${TEST_CLIENTS.full.clientId.length}:${TEST_CLIENTS.full.clientId}:${createHash('sha256').update(key).digest('hex')}}`;

  /** Rewrites the stored claim as an in-flight claim made `ageMs` ago, and its record as written then. */
  async function ageClaim(key: string, ageMs: number, dropAnswer = false): Promise<string> {
    const stored = JSON.parse((await probe.get(claimKey(key)))!) as {
      trackId: string;
      state: string;
      response?: unknown;
      claimedAt: number;
    };
    const rewritten = {
      ...stored,
      claimedAt: Date.now() - ageMs,
      ...(dropAnswer ? { state: 'in_flight', response: undefined } : {}),
    };
    await probe.set(claimKey(key), JSON.stringify(rewritten), 'KEEPTTL');
    // Its record ages with it: a pending record's deadline is what marks its request as dead.
    const recordKey = `{${PREFIX}:inq:${stored.trackId}}`;
    const record = JSON.parse((await probe.get(recordKey))!) as { createdAt: string; deadlineAt?: string };
    const earlier = (iso: string) => new Date(Date.parse(iso) - ageMs).toISOString();
    await probe.set(
      recordKey,
      JSON.stringify({
        ...record,
        createdAt: earlier(record.createdAt),
        ...(record.deadlineAt ? { deadlineAt: earlier(record.deadlineAt) } : {}),
      }),
      'KEEPTTL',
    );
    return stored.trackId;
  }

  it('a request still within its lease gets 409; past the lease the answer is concluded as unknown, never resent', async () => {
    sim.injectFault({ kind: 'hang', path: CHECK_SHAHKAR_PATH });
    const hung = nextEvent(sim, 'fault');
    const first = post('crashed-1');
    await hung;
    const calls = sim.inquiryCalls;

    const inUse = await post('crashed-1');
    expect(inUse.status).toBe(409);
    expect(inUse.body.code).toBe('idempotency_key_in_use');

    const trackId = await ageClaim('crashed-1', 60_000);
    const concluded = await post('crashed-1');
    expect(concluded.status).toBe(504);
    expect(concluded.body).toMatchObject({ code: 'upstream_timeout', trackId });
    expect(concluded.headers.get('x-track-id')).toBe(trackId);
    expect(concluded.headers.get('idempotent-replayed')).toBe('true');
    const record = await callGateway(gateway.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
    expect(record.body.status).toBe('unknown');
    expect(record.headers.get('x-track-id')).toBe(trackId);
    expect(sim.inquiryCalls).toBe(calls);

    // The hung original ends by itself (timeout); later retries are replays, still not sent.
    expect((await first).status).toBe(504);
    const again = await post('crashed-1');
    expect(again.status).toBe(504);
    expect(again.body.trackId).toBe(trackId);
    expect(sim.inquiryCalls).toBe(calls);
  });

  it('a claim abandoned before its record was written is released: the retry runs afresh, once', async () => {
    // A claim whose request died between claiming and recording: nothing reached the upstream.
    await post('fingerprint-donor');
    const donor = JSON.parse((await probe.get(claimKey('fingerprint-donor')))!) as { fingerprint: string };
    const orphan = {
      trackId: randomUUID(),
      fingerprint: donor.fingerprint,
      state: 'in_flight',
      claimedAt: Date.now() - 600_000,
    };
    await probe.set(claimKey('orphan-1'), JSON.stringify(orphan), 'EX', 3600);
    const calls = sim.inquiryCalls;

    const retried = await post('orphan-1');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.trackId).not.toBe(orphan.trackId);
    expect(sim.inquiryCalls).toBe(calls + 1);
    const again = await post('orphan-1');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.trackId).toBe(retried.body.trackId);
    expect(sim.inquiryCalls).toBe(calls + 1);
  });

  it('an answer that provably charged nothing (insufficient credit) releases the key: the retry after a top-up runs', async () => {
    const credit = sim.credit;
    sim.setCredit(0);
    const refused = await post('top-up-1');
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('upstream_unavailable');
    sim.setCredit(credit);
    const retried = await post('top-up-1');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.trackId).not.toBe(refused.body.trackId);
  });

  it('a success whose answer was never stored is replayed from its record', async () => {
    const first = await post('lost-answer-1');
    expect(first.status).toBe(200);
    const trackId = await ageClaim('lost-answer-1', 60_000, true);
    const calls = sim.inquiryCalls;

    const replay = await post('lost-answer-1');
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('x-track-id')).toBe(trackId);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.inquiryCalls).toBe(calls);
    expect(sim.chargeCount(trackId)).toBe(1);
  });
});
