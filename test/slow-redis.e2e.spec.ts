/**
 * Slow Redis leaves no ghosts: when Redis answers slower than the command timeout, the request
 * is refused 503 `store_unavailable`, and the claim or record it asked for, which Redis still
 * carries out later, is undone after it: the retry the 503 invites runs afresh, and the
 * refused trackId has no record. Redis is made slow with `DEBUG SLEEP` on this file's own
 * redis-server (the gateway's command timeout is 2 s).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { callGateway, startGateway, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { expectProblemShape } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

let redis: RedisServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let admin: Redis;

beforeAll(async () => {
  redis = await RedisServer.start({ args: ['--enable-debug-command', 'local'] });
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
  gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '20000' });
  await untilStoreReady(gateway, 15_000);
  admin = new Redis(redis.url);
});

afterAll(async () => {
  admin?.disconnect();
  await gateway?.close();
  await sim?.stop();
  await redis?.stop();
});

const shahkar = (key?: string) =>
  callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
    apiKey: TEST_CLIENTS.full.key,
    json: SHAHKAR,
    headers: key ? { 'idempotency-key': key } : {},
  });

/** Every key in Redis whose name contains `part`. */
const keysWith = (part: string) => admin.keys(`*${part}*`);

/**
 * Makes Redis sleep `seconds` (longer than the 2 s command timeout) and sends `during` while
 * it sleeps; resolves with its answer once Redis is awake and has run everything queued.
 */
async function whileRedisSleeps<T>(seconds: number, during: () => Promise<T>): Promise<T> {
  const sleeper = new Redis(redis.url);
  await sleeper.ping();
  const sleeping = sleeper.call('DEBUG', 'SLEEP', String(seconds));
  const answer = await during();
  await sleeping;
  sleeper.disconnect();
  // Redis runs commands in arrival order: once a PING sent now is answered, the gateway's late
  // writes and its compensating deletes have all run.
  await admin.ping();
  return answer;
}

describe('a request refused because Redis is slow', () => {
  it('leaves no Idempotency-Key claim: the retry runs afresh and succeeds', async () => {
    await shahkar(); // warm: token held, connections open
    const key = 'slow-redis-claim';
    const refused = await whileRedisSleeps(6, () => shahkar(key));
    expectProblemShape(refused, 503, 'store_unavailable');
    // Refused at the claim, after the trackId was stamped: the problem names it (docs/api.md §3).
    const refusedTrackId = refused.body.trackId as string;
    expect(refused.headers.get('x-track-id')).toBe(refusedTrackId);

    const retry = await shahkar(key);
    expect(retry.status).toBe(200);
    expect(retry.body.trackId).not.toBe(refusedTrackId);
    expect(await keysWith(refusedTrackId)).toEqual([]);
  });

  it('leaves no record for the refused trackId', async () => {
    const refused = await whileRedisSleeps(6, () => shahkar());
    expectProblemShape(refused, 503, 'store_unavailable');
    const trackId = refused.body.trackId as string;
    expect(trackId).toBeDefined();
    expect(await keysWith(trackId)).toEqual([]);
    const read = await callGateway(gateway.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
    expect(read.status).toBe(404);
    expect(sim.chargeCount(trackId)).toBe(0);
  });
});
