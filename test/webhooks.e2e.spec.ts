/**
 * Events to the company's services (docs/api.md §9), black box: three gateway replicas sharing
 * one Redis and one PostgreSQL of this file's own, the upstream simulator, and a real receiver
 * that verifies every delivery with the `standardwebhooks` package, as a receiver would. Short
 * delivery timings (WEBHOOKS_POLL_MS, WEBHOOKS_FIRST_RETRY_MS, WEBHOOKS_RETRY_FOR_SECONDS).
 *
 * Proven here: every settled inquiry is delivered once verified, with a stable webhook-id and
 * no personal data; a receiver answering 500 and then recovering gets the same id again; a 410
 * disables its endpoint; a dead delivery is re-sent from the admin route; inquiries settled while
 * PostgreSQL is down are delivered once it is back; 50 concurrent inquiries
 * across a budget's 80 % line give exactly one budget.threshold event; a replica in a process of
 * its own SIGKILLed while the receiver holds its delivery open leaves the delivery to another
 * replica, which sends it under the same webhook-id once the lease has run out.
 */
import { once } from 'node:events';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway, startGateways, TEST_CLIENTS, type RunningGateway } from './support/gateway.js';
import { nextEvent } from './support/events.js';
import { GatewayProcesses } from './support/gateway-process.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const OPS = { clientId: 'ops', key: 'key-ops-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };
const secret = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString('base64')}`;
/** Endpoint `a` is mid-rotation: two secrets; the receiver holds only the new one. */
const SECRETS = {
  a: [secret(1), secret(2)],
  flaky: secret(3),
  gone: secret(4),
  dead: secret(5),
  budget: secret(6),
  held: secret(7),
};
const BUDGET_LIMIT = 60;

interface Delivery {
  path: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  /** What the receiver answered. */
  status: number;
}

/** The receiver: verifies each delivery under its endpoint's secret; answers as `answers` says. */
class Receiver extends EventEmitter {
  readonly verified: Delivery[] = [];
  readonly unverified: string[] = [];
  /** Per path: the status to answer, or a function of how often this id was seen. */
  readonly answers = new Map<string, (seen: number) => number>();
  /** Paths whose deliveries are held open, unanswered (`held` with each): a replica dies mid-delivery. */
  readonly holding = new Set<string>();
  private readonly server: Server;
  url = '';

  constructor(private readonly receivers: Record<string, Webhook>) {
    super();
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const path = request.url?.slice(1) ?? '';
        const headers = request.headers as Record<string, string>;
        try {
          const event = this.receivers[path].verify(body, headers) as Pick<Delivery, 'type' | 'data'>;
          const id = headers['webhook-id'];
          const seen = this.verified.filter((d) => d.path === path && d.id === id).length;
          const status = this.answers.get(path)?.(seen) ?? 200;
          const delivery = { path, id, type: event.type, data: event.data, status };
          if (this.holding.has(path)) {
            this.emit('held', delivery);
            return;
          }
          this.verified.push(delivery);
          response.statusCode = status;
          this.emit('delivery', delivery);
        } catch {
          this.unverified.push(path);
          response.statusCode = 400;
        }
        response.end();
      });
    });
  }

  async start(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }

  /** Resolves once `count` distinct ids were verified on `path` (answered 2xx). */
  async untilDelivered(path: string, count: number, timeoutMs = 20_000): Promise<Set<string>> {
    const ids = () => new Set(this.verified.filter((d) => d.path === path && d.status < 300).map((d) => d.id));
    if (ids().size < count) await nextEvent(this, 'delivery', () => ids().size >= count, timeoutMs);
    return ids();
  }
}

const endpoint = (id: keyof typeof SECRETS, clientId: string, events: string[]) => ({
  id,
  clientId,
  url: `${receiver.url}/${id}`,
  secret: SECRETS[id],
  events,
});

let redis: RedisServer;
let postgres: PostgresServer;
let sim: UpstreamSimulator;
let receiver: Receiver;
let gateways: RunningGateway[];
const processes = new GatewayProcesses();

beforeAll(async () => {
  receiver = new Receiver(
    Object.fromEntries(Object.entries(SECRETS).map(([path, s]) => [path, new Webhook(Array.isArray(s) ? s[1] : s)])),
  );
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start(), receiver.start()]);
  await sim.start(0);
  const env = {
    REDIS_URL: redis.url,
    LEDGER_DATABASE_URL: postgres.url,
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(OPS),
    BUDGETS: JSON.stringify([{ clientId: TEST_CLIENTS.full.clientId, daily: BUDGET_LIMIT }]),
    WEBHOOKS: JSON.stringify([
      endpoint('a', TEST_CLIENTS.basic.clientId, ['inquiry.settled']),
      endpoint('flaky', TEST_CLIENTS.basic.clientId, ['inquiry.settled']),
      endpoint('gone', TEST_CLIENTS.basic.clientId, ['inquiry.settled']),
      endpoint('dead', TEST_CLIENTS.other.clientId, ['inquiry.settled']),
      endpoint('budget', TEST_CLIENTS.full.clientId, ['budget.threshold']),
    ]),
    WEBHOOKS_ALLOW_HTTP: 'true',
    WEBHOOKS_POLL_MS: '50',
    WEBHOOKS_FIRST_RETRY_MS: '100',
    WEBHOOKS_RETRY_FOR_SECONDS: '2',
  };
  // The third replica leaves deliveries to the others (WEBHOOKS_DELIVER=false, as beside a drainer).
  const [delivering, apart] = await Promise.all([
    startGateways(2, env),
    startGateways(1, { ...env, WEBHOOKS_DELIVER: 'false' }),
  ]);
  gateways = [...delivering, ...apart];
}, 120_000);

afterAll(async () => {
  await processes.killAll();
  await Promise.all((gateways ?? []).map((gateway) => gateway.close()));
  await Promise.all([redis?.stop(), postgres?.stop(), sim?.stop(), receiver?.stop()]);
});

async function inquire(gateway: Pick<RunningGateway, 'url'>, apiKey: string): Promise<string> {
  const res = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey, json: SHAHKAR });
  expect(res.status).toBe(200);
  return res.body.trackId as string;
}

describe('webhooks', () => {
  it('delivers every settled inquiry, verified, once per id, without personal data; retries a 500; a 410 disables', async () => {
    receiver.answers.set('flaky', (seen) => (seen === 0 ? 500 : 200));
    receiver.answers.set('gone', () => 410);
    const trackIds = await Promise.all(
      Array.from({ length: 9 }, (_, i) => inquire(gateways[i % 3], TEST_CLIENTS.basic.key)),
    );
    const ids = await receiver.untilDelivered('a', 9);
    await receiver.untilDelivered('flaky', 9);
    const toA = receiver.verified.filter((d) => d.path === 'a');
    expect(toA).toHaveLength(9); // one attempt each: delivered, never sent twice
    expect(toA.map((d) => d.data.trackId).sort()).toEqual([...trackIds].sort());
    for (const { type, data } of toA) {
      expect(type).toBe('inquiry.settled');
      expect(Object.keys(data).sort()).toEqual(['charged', 'completedAt', 'operation', 'status', 'trackId']);
      expect(data).toMatchObject({ operation: 'shahkar', status: 'succeeded', charged: 'yes' });
    }
    expect(ids.size).toBe(9);
    // The receiver that answered 500 got each event again under the same webhook-id.
    const flaky = receiver.verified.filter((d) => d.path === 'flaky');
    expect(new Set(flaky.map((d) => d.id)).size).toBe(9);
    expect(flaky.length).toBeGreaterThanOrEqual(18);
    // 410: one attempt at most per replica in flight when it answered, then nothing more.
    const goneBefore = receiver.verified.filter((d) => d.path === 'gone').length;
    const later = await inquire(gateways[0], TEST_CLIENTS.basic.key);
    await nextEvent<Delivery>(receiver, 'delivery', (d) => d.path === 'a' && d.data.trackId === later);
    await receiver.untilDelivered('flaky', 10);
    expect(receiver.verified.filter((d) => d.path === 'gone').length).toBe(goneBefore);
    expect(goneBefore).toBeGreaterThanOrEqual(1);
    const failing = await callGateway(gateways[1].url, 'GET', '/admin/webhooks/deliveries?status=failing', {
      apiKey: OPS.key,
    });
    expect(failing.status).toBe(200);
    const gone = (failing.body.deliveries as Array<Record<string, unknown>>).filter((d) => d.endpointId === 'gone');
    expect(gone.length).toBeGreaterThanOrEqual(1);
    expect(gone[0]).toMatchObject({ status: 'pending', lastStatus: 410, lastError: 'HTTP 410' });
    expect(receiver.unverified).toEqual([]);
    const delivered = async (gateway: RunningGateway) =>
      Number(
        /vgw_webhook_deliveries_total\{endpoint="a",result="delivered"\} (\d+)/.exec(
          await (await fetch(`${gateway.url}/metrics`)).text(),
        )?.[1],
      );
    // Each count follows its receiver's 2xx by one outcome statement: read until the ten are in.
    for (let look = 0; look < 100 && (await delivered(gateways[0])) + (await delivered(gateways[1])) < 10; look++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await delivered(gateways[0])) + (await delivered(gateways[1]))).toBe(10);
    expect(await delivered(gateways[2])).toBe(0);
    const metrics = await (await fetch(`${gateways[0].url}/metrics`)).text();
    expect(metrics).toMatch(/vgw_webhook_deliveries_total\{endpoint="dead",result="dead"\} 0/);
    expect(metrics).not.toContain(SECRETS.flaky.slice(6));
  }, 60_000);

  it('marks a delivery dead after the retry period, and re-sends it from the admin route with the same id', async () => {
    receiver.answers.set('dead', () => 503);
    const trackId = await inquire(gateways[2], TEST_CLIENTS.other.key);
    const first = await nextEvent<Delivery>(receiver, 'delivery', (d) => d.path === 'dead');
    let dead: Array<Record<string, unknown>> = [];
    // Dead after WEBHOOKS_RETRY_FOR_SECONDS (2 s): each attempt is an event; the list is read after
    // each. The last attempt is followed by no event, and its outcome is written just after the
    // receiver answers (in the outcomes' next statement): a second's wait then reads it.
    for (let look = 0; dead.length === 0 && look < 50; look++) {
      await nextEvent(receiver, 'delivery', (d: Delivery) => d.path === 'dead', 1_000).catch(() => undefined);
      const res = await callGateway(gateways[0].url, 'GET', '/admin/webhooks/deliveries?status=dead', {
        apiKey: OPS.key,
      });
      dead = (res.body.deliveries as Array<Record<string, unknown>>).filter((d) => d.endpointId === 'dead');
    }
    expect(dead[0]).toMatchObject({ id: first.id, status: 'dead', lastStatus: 503, data: { trackId } });
    receiver.answers.set('dead', () => 200);
    const noScope = await callGateway(gateways[0].url, 'POST', `/admin/webhooks/deliveries/${first.id}/retry`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(noScope.status).toBe(403);
    const resent = nextEvent<Delivery>(receiver, 'delivery', (d) => d.path === 'dead');
    const retry = await callGateway(gateways[0].url, 'POST', `/admin/webhooks/deliveries/${first.id}/retry`, {
      apiKey: OPS.key,
    });
    expect(retry.status).toBe(202);
    expect(await resent).toMatchObject({ id: first.id, status: 200, data: { trackId } });
    const unknown = await callGateway(gateways[0].url, 'POST', `/admin/webhooks/deliveries/${trackId}/retry`, {
      apiKey: OPS.key,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
  }, 60_000);

  it('delivers the inquiries settled while PostgreSQL was down, once it is back', async () => {
    await postgres.kill();
    // Inquiries go on: their entries, and so their events, wait in Redis.
    const trackIds = await Promise.all([0, 1, 2].map((i) => inquire(gateways[i], TEST_CLIENTS.basic.key)));
    await postgres.restart();
    const delivered = async () =>
      nextEvent<Delivery>(
        receiver,
        'delivery',
        (d) => d.path === 'a' && trackIds.includes(d.data.trackId as string),
        30_000,
      );
    const seen = new Set<unknown>();
    while (seen.size < trackIds.length) seen.add((await delivered()).data.trackId);
    expect([...seen].sort()).toEqual([...trackIds].sort());
  }, 60_000);

  it('tells one budget.threshold for 50 concurrent inquiries across the 80 % line, whichever replica saw it', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        callGateway(gateways[i % 3].url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    const [event] = await receiver
      .untilDelivered('budget', 1)
      .then(() => receiver.verified.filter((d) => d.path === 'budget'));
    expect(event).toMatchObject({
      type: 'budget.threshold',
      data: { budget: TEST_CLIENTS.full.clientId, window: 'daily', threshold: 80, limitUnits: BUDGET_LIMIT },
    });
    // Absence has no event to await: one observation period (5 s), in which every replica looks
    // at the budgets again and finds the window told.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    expect(receiver.verified.filter((d) => d.path === 'budget')).toHaveLength(1);
  }, 60_000);

  it('leaves a delivery whose replica was SIGKILLed mid-delivery to another, which sends it under the same webhook-id', async () => {
    const HELD = { clientId: 'app-held', key: 'key-held-0123456789', scopes: ['kyc:shahkar'] };
    // Replicas in processes of their own, the only ones configured with the endpoint `held`.
    const env = {
      REDIS_URL: redis.url,
      LEDGER_DATABASE_URL: postgres.url,
      UPSTREAM_BASE_URL: sim.baseUrl,
      API_KEYS: apiKeysWith(HELD),
      WEBHOOKS: JSON.stringify([endpoint('held', HELD.clientId, ['inquiry.settled'])]),
      WEBHOOKS_ALLOW_HTTP: 'true',
      WEBHOOKS_POLL_MS: '50',
    };
    receiver.holding.add('held');
    const doomed = await processes.start(env);
    const held = nextEvent<Delivery>(receiver, 'held', (d) => d.path === 'held', 30_000);
    const trackId = await inquire(doomed, HELD.key);
    const first = await held;
    expect(first.data.trackId).toBe(trackId);
    doomed.process.kill('SIGKILL');
    await doomed.exited;
    receiver.holding.delete('held');
    // Its claim's lease (30 s: three delivery timeouts) is run out in the database rather than
    // waited for (the lease's own expiry is webhook-outbox.integration's); the row is still the
    // dead replica's claim until then, and the other replica takes it after.
    const taken = nextEvent<Delivery>(receiver, 'delivery', (d) => d.path === 'held', 30_000);
    const leased = await gateways[0].app
      .get(LedgerStore)
      .db.query<{ id: string }>(
        `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1 AND status = 'pending' AND next_attempt_at > now() RETURNING id`,
        [first.id],
      );
    expect(leased).toEqual([{ id: first.id }]);
    await processes.start(env);
    expect(await taken).toMatchObject({ id: first.id, type: 'inquiry.settled', status: 200, data: { trackId } });
    expect(receiver.unverified).toEqual([]);
  }, 120_000);
});
