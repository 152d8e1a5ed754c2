/**
 * Section 2: token single flight. N gateway instances (in this process) share one Redis and
 * one simulator whose every answer, GetToken included, takes ~100 ms. Cold start: the
 * instances boot together and M concurrent inquiries are spread over them at once; the
 * simulator counts GetToken calls. Forced renewal: every access token is expired upstream,
 * then M concurrent `renewAfterRejection(oldToken)` calls are spread over the instances.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { startGateways, TEST_CLIENTS, type RunningGateway } from '../test/support/gateway.js';
import { UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';
import { heading, num, table } from './lib/format.js';

export const TOKEN_LATENCY_MS = 100;
const BODY = JSON.stringify({ nationalCode: '0499370899', mobileNumber: '09121234567' });

export interface SingleFlightCase {
  instances: number;
  concurrentRequests: number;
  /** ms from the start of booting until every instance was listening. */
  bootMs: number;
  /** ms from the start of booting until the first M requests were sent. */
  requestsSentAtMs: number;
  /** ms from the start of booting until the simulator answered the first GetToken. */
  firstGetTokenAnsweredMs: number | null;
  /** ms from the start of booting until the first / the last instance held a token. */
  firstInstanceTokenMs: number;
  lastInstanceTokenMs: number;
  coldGetTokenCalls: number;
  /** How the M cold requests were answered (status → count; 0 = network error). */
  coldStatuses: Record<string, number>;
  /** ms from sending the cold requests until the first 200 and until the last answer. */
  coldFirst200Ms: number | null;
  coldAllAnsweredMs: number;
  forcedGetTokenCalls: number;
  forcedRenewalMs: number;
  /** Distinct tokens returned by the M renewAfterRejection calls (1 = everyone got the same). */
  forcedDistinctTokens: number;
  forcedOldTokenReturned: boolean;
  instancesAgreedBefore: boolean;
}

export interface SingleFlightResult {
  tokenLatencyMs: number;
  cases: SingleFlightCase[];
  /** True when every renewal (cold and forced) took exactly one GetToken call. */
  allSingleFlight: boolean;
}

const getTokenCalls = (sim: UpstreamSimulator) => sim.tokenCalls.credentials + sim.tokenCalls.refresh;

async function inquiry(url: string): Promise<{ status: number; at: number }> {
  try {
    const response = await fetch(`${url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_CLIENTS.basic.key },
      body: BODY,
    });
    await response.arrayBuffer();
    return { status: response.status, at: performance.now() };
  } catch {
    return { status: 0, at: performance.now() };
  }
}

async function runCase(instances: number, concurrent: number, redisUrl: string): Promise<SingleFlightCase> {
  const sim = new UpstreamSimulator({ latencyMs: TOKEN_LATENCY_MS, credit: Number.MAX_SAFE_INTEGER });
  await sim.start(0, '127.0.0.1');
  let gateways: RunningGateway[] = [];
  try {
    const first: { getTokenAnsweredAt: number | null } = { getTokenAnsweredAt: null };
    sim.once('token', () => {
      first.getTokenAnsweredAt = performance.now();
    });
    // A key prefix of its own: every case starts with no shared token (cold).
    const env = {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `sf${instances}x${concurrent}-${randomBytes(4).toString('hex')}`,
    };

    const t0 = performance.now();
    gateways = await startGateways(instances, env);
    const bootedAt = performance.now();
    const held = gateways.map((g) => g.tokens.getAccessToken().then(() => performance.now()));
    const sentAt = performance.now();
    const answers = await Promise.all(
      Array.from({ length: concurrent }, (_, i) => inquiry(gateways[i % instances].url)),
    );
    const heldAt = await Promise.all(held);
    const coldGetTokenCalls = getTokenCalls(sim);

    const coldStatuses: Record<string, number> = {};
    for (const { status } of answers) coldStatuses[status] = (coldStatuses[status] ?? 0) + 1;
    const ok = answers.filter((a) => a.status === 200).map((a) => a.at);

    // Forced renewal: the upstream rejects the token everyone holds.
    const before = await Promise.all(gateways.map((g) => g.tokens.getAccessToken()));
    const oldToken = before[0];
    const callsBefore = getTokenCalls(sim);
    sim.expireAllAccessTokens();
    const r0 = performance.now();
    const renewed = await Promise.all(
      Array.from({ length: concurrent }, (_, i) => gateways[i % instances].tokens.renewAfterRejection(oldToken)),
    );
    const forcedRenewalMs = performance.now() - r0;

    const since = (at: number) => at - t0;
    return {
      instances,
      concurrentRequests: concurrent,
      bootMs: since(bootedAt),
      requestsSentAtMs: since(sentAt),
      firstGetTokenAnsweredMs: first.getTokenAnsweredAt === null ? null : since(first.getTokenAnsweredAt),
      firstInstanceTokenMs: since(Math.min(...heldAt)),
      lastInstanceTokenMs: since(Math.max(...heldAt)),
      coldGetTokenCalls,
      coldStatuses,
      coldFirst200Ms: ok.length > 0 ? Math.min(...ok) - sentAt : null,
      coldAllAnsweredMs: Math.max(...answers.map((a) => a.at)) - sentAt,
      forcedGetTokenCalls: getTokenCalls(sim) - callsBefore,
      forcedRenewalMs,
      forcedDistinctTokens: new Set(renewed).size,
      forcedOldTokenReturned: renewed.includes(oldToken),
      instancesAgreedBefore: before.every((t) => t === oldToken),
    };
  } finally {
    await Promise.all(gateways.map((g) => g.close()));
    await sim.stop();
  }
}

export async function benchTokenSingleFlight(
  redisUrl: string,
  instanceCounts: readonly number[],
  concurrencies: readonly number[],
  log: (line: string) => void,
): Promise<SingleFlightResult> {
  const cases: SingleFlightCase[] = [];
  for (const n of instanceCounts) {
    for (const m of concurrencies) {
      log(`  ${n} instance(s) x ${m} concurrent requests ...`);
      cases.push(await runCase(n, m, redisUrl));
    }
  }
  const allSingleFlight = cases.every((c) => c.coldGetTokenCalls === 1 && c.forcedGetTokenCalls === 1);
  return { tokenLatencyMs: TOKEN_LATENCY_MS, cases, allSingleFlight };
}

export function formatTokenSingleFlight(result: SingleFlightResult): string {
  const verdict = (calls: number) => (calls === 1 ? '1 ok' : `${calls} FAIL`);
  const ms = (v: number | null) => (v === null ? '-' : num(v));
  const statuses = (s: Record<string, number>) =>
    Object.entries(s)
      .map(([code, count]) => `${code}:${count}`)
      .join(' ');
  const rows = result.cases.map((c) => [
    `${c.instances} x ${c.concurrentRequests}`,
    num(c.bootMs),
    ms(c.firstGetTokenAnsweredMs),
    num(c.firstInstanceTokenMs),
    num(c.lastInstanceTokenMs),
    verdict(c.coldGetTokenCalls),
    statuses(c.coldStatuses),
    ms(c.coldFirst200Ms),
    num(c.coldAllAnsweredMs),
    verdict(c.forcedGetTokenCalls),
    num(c.forcedRenewalMs),
    c.forcedDistinctTokens === 1 && !c.forcedOldTokenReturned && c.instancesAgreedBefore ? 'yes' : 'NO',
  ]);
  return [
    heading('2. Token single flight (instances share one Redis; GetToken latency ~100 ms)'),
    'Times in ms from the start of booting (boot .. last instance token; the M requests are sent as soon as all instances',
    'listen), from sending the requests (first 200, all answered), or from the start of the forced renewal.',
    '"GetToken calls" counts the GetToken requests the simulator received (must be 1 per renewal).',
    '',
    table(
      [
        'N x M',
        'boot',
        'GetToken answered',
        'first instance token',
        'last instance token',
        'cold GetToken calls',
        'cold statuses',
        'first 200',
        'all answered',
        'forced GetToken calls',
        'forced renewal',
        'one new token',
      ],
      rows,
    ),
    '',
    result.allSingleFlight
      ? 'Single flight held: exactly 1 GetToken call per renewal in every case.'
      : 'SINGLE FLIGHT BROKEN: some renewal took more than one GetToken call (see FAIL above).',
  ].join('\n');
}
