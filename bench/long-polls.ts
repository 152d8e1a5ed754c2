/**
 * Section 4: what held long-polls cost (docs/api.md, "Asynchronous answers"). One gateway (in
 * this process) on the bench's redis-server; one inquiry kept `pending` (the simulator processes
 * it and holds its answer). Reference, measured in the same run: N idle keep-alive connections
 * to the same gateway. Then N `GET /v1/inquiries/{trackId}` with `Prefer: wait=60` held on N
 * connections: the heap and RSS above the reference are the cost of the held requests
 * themselves (server and client side both live in this process), and the Redis connections are
 * counted with CLIENT LIST before and while they are held. Last, one settlement notice is
 * published and the time until every held poll has been answered is taken (the fan-out).
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { startGateway, TEST_CLIENTS, type RunningGateway } from '../test/support/gateway.js';
import type { RedisServer } from '../test/support/redis-server.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { heading, num, table } from './lib/format.js';

export interface LongPollCase {
  held: number;
  /** Heap and RSS (MiB) above the gateway at rest, with N idle connections, and with N held polls. */
  idle: { heapMiB: number; rssMiB: number };
  waiting: { heapMiB: number; rssMiB: number };
  /** KiB of heap per held poll beyond an idle connection. */
  heapKiBPerPoll: number;
  redisConnectionsBefore: number;
  redisConnectionsHeld: number;
  /** ms from the PUBLISH of one settlement notice until every held poll was answered. */
  wakeAllMs: number;
}

export interface LongPollResult {
  cases: LongPollCase[];
}

const MiB = 1024 * 1024;

function memory(): { heap: number; rss: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  return { heap: heapUsed, rss };
}

async function untilHeld(metrics: GatewayMetrics, count: number): Promise<void> {
  for (;;) {
    const { values } = await metrics.inquiryWaitsHeld.get();
    if ((values[0]?.value ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function clientCount(redis: Redis): Promise<number> {
  const list = (await redis.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((line) => line.includes('name=vgw-')).length;
}

export async function benchLongPolls(options: { redis: RedisServer; sizes: number[] }): Promise<LongPollResult> {
  if (!(globalThis as { gc?: unknown }).gc)
    throw new Error('section 4 needs node --expose-gc (npm run bench passes it)');
  const sim = new UpstreamSimulator();
  await sim.start();
  const probe = new Redis(options.redis.url);
  let gateway: RunningGateway | undefined;
  const cases: LongPollCase[] = [];
  try {
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: options.redis.url,
      REDIS_KEY_PREFIX: 'bench-long-polls',
      UPSTREAM_TIMEOUT_MS: '120000',
      INQUIRY_MAX_HELD_WAITS: String(Math.max(...options.sizes)),
    });
    const metrics = gateway.app.get(GatewayMetrics);
    const headers = { 'x-api-key': TEST_CLIENTS.full.key, 'content-type': 'application/json' };
    // The pending inquiry: processed upstream, its answer held for the whole section.
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'hang-after-processing' });
    const accepted = await request(`${gateway.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { ...headers, prefer: 'respond-async' },
      body: JSON.stringify({ nationalCode: '0499370899', mobileNumber: '09121234567' }),
    });
    const { trackId } = (await accepted.body.json()) as { trackId: string };

    for (const held of options.sizes) {
      const agent = new Agent({ connections: held, pipelining: 1, keepAliveTimeout: 120_000 });
      try {
        const rest = memory();
        // Reference: N idle keep-alive connections (each made by one cheap request).
        await Promise.all(
          Array.from({ length: held }, async () => {
            const res = await request(`${gateway!.url}/health/live`, { dispatcher: agent });
            await res.body.dump();
          }),
        );
        const idle = memory();
        const redisConnectionsBefore = await clientCount(probe);
        // N long-polls on those connections, held until a notice wakes them.
        const polls = Array.from({ length: held }, async () => {
          const res = await request(`${gateway!.url}/v1/inquiries/${trackId}`, {
            dispatcher: agent,
            headers: { ...headers, prefer: 'wait=60' },
          });
          await res.body.dump();
          return performance.now();
        });
        await untilHeld(metrics, held);
        const waiting = memory();
        const redisConnectionsHeld = await clientCount(probe);
        const published = performance.now();
        await probe.publish(`bench-long-polls:inq:settled:${trackId}`, trackId);
        const answeredAt = await Promise.all(polls);
        cases.push({
          held,
          idle: { heapMiB: (idle.heap - rest.heap) / MiB, rssMiB: (idle.rss - rest.rss) / MiB },
          waiting: { heapMiB: (waiting.heap - rest.heap) / MiB, rssMiB: (waiting.rss - rest.rss) / MiB },
          heapKiBPerPoll: (waiting.heap - idle.heap) / 1024 / held,
          redisConnectionsBefore,
          redisConnectionsHeld,
          wakeAllMs: Math.max(...answeredAt) - published,
        });
      } finally {
        await agent.close();
      }
    }
  } finally {
    // The simulator first: it lets go of the held inquiry, which settles, so the gateway's
    // shutdown (which waits for accepted inquiries) does not wait for its timeout.
    await sim.stop();
    await gateway?.close();
    probe.disconnect();
  }
  return { cases };
}

export function formatLongPolls(result: LongPollResult): string {
  return [
    heading('held long-polls: cost above N idle connections, Redis connections, wake-up fan-out'),
    table(
      [
        'held',
        'idle conns heap/RSS MiB',
        'held polls heap/RSS MiB',
        'KiB heap per poll',
        'Redis conns before/held',
        'wake all ms',
      ],
      result.cases.map((c) => [
        num(c.held),
        `${num(c.idle.heapMiB, 1)} / ${num(c.idle.rssMiB, 1)}`,
        `${num(c.waiting.heapMiB, 1)} / ${num(c.waiting.rssMiB, 1)}`,
        num(c.heapKiBPerPoll, 1),
        `${c.redisConnectionsBefore} / ${c.redisConnectionsHeld}`,
        num(c.wakeAllMs, 1),
      ]),
    ),
  ].join('\n');
}
