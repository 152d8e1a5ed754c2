/**
 * /metrics after a scripted mix of requests (docs/runbooks.md builds its alerts on these):
 * names, types, labels and values; route templates, never raw paths; gauges true at every
 * scrape (no readiness probe needed); Node defaults under their standard names; and
 * `promtool check metrics` accepts the exposition.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisConnection } from '../src/store/redis-connection.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR } from './support/fixtures.js';
import {
  TEST_CLIENTS,
  callGateway,
  startGateway,
  untilStoreReady,
  type RunningGateway,
  apiKeysWith,
  untilStarted,
} from './support/gateway.js';
import { parseExposition, promtool, runPromtool, type Exposition } from './support/prometheus.js';
import { itWith } from './support/tools.js';
import { RedisServer } from './support/redis-server.js';

const QUOTA_KEY = 'key-quota-0123456789';
const API_KEYS = apiKeysWith({ clientId: 'app-quota', key: QUOTA_KEY, scopes: ['kyc:shahkar'], quotaPerMinute: 1 });
const COMMIT = '0123abcd';
const TRACK_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe('metrics after a scripted mix of requests', () => {
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let memoryGateway: RunningGateway;
  let text: string;
  let scrape: Exposition;
  let afterRedisLoss: Exposition;
  let memoryScrape: Exposition;
  let firstScrape: Exposition;

  const get = async (g: RunningGateway) => parseExposition((await callGateway(g.url, 'GET', '/metrics')).text);

  beforeAll(async () => {
    redis = await RedisServer.start();
    sim = new UpstreamSimulator();
    await sim.start();
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      API_KEYS,
      BUILD_COMMIT: COMMIT,
    });
    await untilStoreReady(gateway);
    firstScrape = await get(gateway);
    const key = TEST_CLIENTS.full.key;
    const post = (options: Parameters<typeof callGateway>[3]) =>
      callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: key, ...options });

    const statuses: number[] = [];
    const ok = await post({ json: SHAHKAR });
    statuses.push(ok.status, (await post({ json: SHAHKAR })).status);
    statuses.push(
      (await callGateway(gateway.url, 'GET', `/v1/inquiries/${String(ok.body.trackId)}`, { apiKey: key })).status,
    );
    statuses.push(
      (await callGateway(gateway.url, 'GET', '/v1/inquiries/3aa71531-26f9-441f-a01a-493f40f0ea1a', { apiKey: key }))
        .status,
    );
    statuses.push((await callGateway(gateway.url, 'GET', `/v1/nothing/${String(ok.body.trackId)}`)).status);
    statuses.push((await post({ json: { ...SHAHKAR, nationalCode: '123' } })).status);
    statuses.push((await post({ raw: '{"nationalCode":' })).status);
    statuses.push((await post({ json: SHAHKAR, apiKey: undefined })).status);
    statuses.push((await post({ json: SHAHKAR, apiKey: 'wrong-key-0123456789' })).status);
    statuses.push((await post({ json: SHAHKAR, apiKey: TEST_CLIENTS.none.key })).status);
    statuses.push((await post({ json: SHAHKAR, apiKey: QUOTA_KEY })).status);
    statuses.push((await post({ json: SHAHKAR, apiKey: QUOTA_KEY })).status);
    sim.setCredit(0);
    statuses.push((await post({ json: SHAHKAR })).status);
    expect(statuses).toEqual([200, 200, 200, 404, 404, 400, 400, 401, 401, 403, 200, 429, 503]);

    const response = await callGateway(gateway.url, 'GET', '/metrics');
    expect(response.headers.get('content-type')).toContain('text/plain');
    text = response.text;
    scrape = parseExposition(text);

    // Redis goes away: the next scrape says so, with no readiness probe in between.
    const { client } = gateway.app.get(RedisConnection);
    const closed = once(client!, 'close');
    await redis.kill();
    await closed;
    expect((await post({ json: SHAHKAR })).status).toBe(503);
    afterRedisLoss = await get(gateway);

    // The in-process store, and credentials the upstream refuses.
    memoryGateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, UPSTREAM_PASSWORD: 'not-the-password' });
    await untilStarted(memoryGateway.app);
    memoryScrape = await get(memoryGateway);
  });

  afterAll(async () => {
    await gateway?.close();
    await memoryGateway?.close();
    await sim?.stop();
    await redis?.stop();
  });

  it('exports every series an alert reads at 0 from start-up, so increase() sees the first event', () => {
    // A counter first scraped at 1 shows Prometheus no rise: a lone unknown outcome, a first 402
    // or a burst of 502s between two scrapes after a start would never alert.
    const zero = (name: string, labels: Record<string, string>) =>
      expect({ name, labels, value: firstScrape.value(name, labels) }).toEqual({ name, labels, value: 0 });
    for (const operation of ['shahkar', 'iban']) {
      for (const status of ['succeeded', 'failed', 'unknown']) zero('vgw_inquiries_total', { operation, status });
      for (const outcome of ['success', 'http_402', 'timeout', 'dropped', 'not_sent', 'malformed', 'http_500']) {
        zero('vgw_upstream_call_duration_seconds_count', { operation, outcome });
      }
      for (const result of ['hit', 'join', 'stale', 'miss', 'not_cached'])
        zero('vgw_reuse_total', { operation, result });
      zero('vgw_reuse_units_saved_total', { operation });
      zero('vgw_refusal_tally_dropped_total', {});
      zero('vgw_budget_moves_not_held_total', {});
      for (const [status, code] of [
        ['502', 'upstream_error'],
        ['503', 'upstream_unavailable'],
        ['503', 'store_unavailable'],
        ['504', 'upstream_timeout'],
        ['500', 'internal'],
      ]) {
        zero('vgw_http_request_duration_seconds_count', {
          route: `/v1/kyc/${operation}`,
          method: 'POST',
          status,
          code,
        });
      }
    }
    for (const reason of ['missing_credential', 'invalid_api_key', 'invalid_jwt', 'missing_scope']) {
      zero('vgw_auth_failures_total', { reason });
    }
    for (const scope of ['client', 'user']) zero('vgw_quota_rejections_total', { scope });
    for (const reason of ['password_not_set', 'credentials_rejected', 'account_disabled', 'upstream_failure']) {
      zero('vgw_token_renewal_failures_total', { reason });
    }
    zero('vgw_token_renewals_total', { grant: 'refresh', result: 'failure' });
  });

  it('declares every gateway metric with its type', () => {
    expect(Object.fromEntries([...scrape.types].filter(([name]) => name.startsWith('vgw_')))).toEqual({
      vgw_http_request_duration_seconds: 'histogram',
      vgw_auth_failures_total: 'counter',
      vgw_budget_limit_units: 'gauge',
      vgw_budget_refusals_total: 'counter',
      vgw_budget_reserved_units: 'gauge',
      vgw_budget_spent_units: 'gauge',
      vgw_quota_rejections_total: 'counter',
      vgw_inquiries_accepted_total: 'counter',
      vgw_inquiry_waits_total: 'counter',
      vgw_inquiry_waits_held: 'gauge',
      vgw_validation_failures_total: 'counter',
      vgw_webhook_deliveries_total: 'counter',
      vgw_webhook_oldest_pending_seconds: 'gauge',
      vgw_upstream_call_duration_seconds: 'histogram',
      vgw_token_renewals_total: 'counter',
      vgw_token_renewal_failures_total: 'counter',
      vgw_token_adopted_total: 'counter',
      vgw_inquiries_total: 'counter',
      vgw_idempotent_replays_total: 'counter',
      vgw_upstream_circuit_open: 'gauge',
      vgw_redis_command_duration_seconds: 'histogram',
      vgw_redis_command_errors_total: 'counter',
      vgw_store_up: 'gauge',
      vgw_token_expiry_seconds: 'gauge',
      vgw_build_info: 'gauge',
      vgw_ledger_queue_depth: 'gauge',
      vgw_ledger_queue_oldest_age_seconds: 'gauge',
      vgw_ledger_entries_parked_total: 'counter',
      vgw_ledger_entries_written_total: 'counter',
      vgw_ledger_write_failures_total: 'counter',
      vgw_ledger_worker_restarts_total: 'counter',
      vgw_ledger_unknowns_older_than_a_day: 'gauge',
      vgw_tracking_questions_total: 'counter',
      vgw_reconciliation_unsent_charges_total: 'counter',
      vgw_reuse_total: 'counter',
      vgw_reuse_units_saved_total: 'counter',
      vgw_refusal_tally_dropped_total: 'counter',
      vgw_budget_moves_not_held_total: 'counter',
    });
  });

  it('counts every request by route template, method, status and problem code', () => {
    const count = (labels: Record<string, string>) => scrape.value('vgw_http_request_duration_seconds_count', labels);
    const shahkar = { route: '/v1/kyc/shahkar', method: 'POST' };
    expect(count({ ...shahkar, status: '200', code: 'none' })).toBe(3);
    expect(count({ ...shahkar, status: '400', code: 'validation_failed' })).toBe(2);
    expect(count({ ...shahkar, status: '401', code: 'unauthenticated' })).toBe(2);
    expect(count({ ...shahkar, status: '403', code: 'forbidden' })).toBe(1);
    expect(count({ ...shahkar, status: '429', code: 'rate_limited' })).toBe(1);
    expect(count({ ...shahkar, status: '503', code: 'upstream_unavailable' })).toBe(1);
    const read = { route: '/v1/inquiries/:trackId', method: 'GET' };
    expect(count({ ...read, status: '200', code: 'none' })).toBe(1);
    expect(count({ ...read, status: '404', code: 'not_found' })).toBe(1);
    expect(count({ route: 'unmatched', method: 'GET', status: '404', code: 'not_found' })).toBe(1);
    // Buckets are cumulative and end in +Inf = count.
    const buckets = scrape.find('vgw_http_request_duration_seconds_bucket', { ...shahkar, status: '200' });
    expect(buckets.at(-1)).toMatchObject({ labels: expect.objectContaining({ le: '+Inf' }), value: 3 });
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
  });

  it('never puts a raw path, trackId or identifier in a label', () => {
    for (const sample of scrape.samples) {
      for (const value of Object.values(sample.labels)) {
        expect(value).not.toMatch(TRACK_ID);
        expect(value).not.toContain('0499370899');
        expect(value).not.toContain('/nothing');
      }
    }
  });

  it('counts authentication failures, quota rejections and validation failures by bounded label', () => {
    expect(scrape.find('vgw_auth_failures_total').map((s) => [s.labels.reason, s.value])).toEqual(
      expect.arrayContaining([
        ['missing_credential', 1],
        ['invalid_api_key', 1],
        ['missing_scope', 1],
      ]),
    );
    expect(scrape.value('vgw_quota_rejections_total', { scope: 'client' })).toBe(1);
    expect(scrape.value('vgw_validation_failures_total', { route: '/v1/kyc/shahkar' })).toBe(2);
  });

  it('shows the upstream answers, credit exhaustion (402) included, and the inquiries', () => {
    expect(scrape.value('vgw_upstream_call_duration_seconds_count', { operation: 'shahkar', outcome: 'success' })).toBe(
      3,
    );
    expect(
      scrape.value('vgw_upstream_call_duration_seconds_count', { operation: 'shahkar', outcome: 'http_402' }),
    ).toBe(1);
    expect(scrape.value('vgw_inquiries_total', { operation: 'shahkar', status: 'succeeded' })).toBe(3);
    expect(scrape.value('vgw_token_renewals_total', { grant: 'credentials', result: 'success' })).toBe(1);
  });

  it('reads the state gauges at scrape time: store, token expiry, build', () => {
    expect(scrape.value('vgw_store_up')).toBe(1);
    const expiry = scrape.value('vgw_token_expiry_seconds', { token: 'access' })!;
    expect(expiry).toBeGreaterThan(60);
    expect(expiry).toBeLessThanOrEqual(8 * 3600); // the simulator's access-token lifetime
    expect(scrape.value('vgw_build_info', { version: '0.1.0', commit: COMMIT, node: process.version })).toBe(1);
    expect(scrape.value('vgw_upstream_circuit_open')).toBe(0);

    expect(afterRedisLoss.value('vgw_store_up')).toBe(0);
    expect(memoryScrape.value('vgw_store_up')).toBe(1);
  });

  it('times Redis commands and counts their errors', () => {
    const ok = scrape.find('vgw_redis_command_duration_seconds_count', { outcome: 'ok' });
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.reduce((sum, s) => sum + s.value, 0)).toBeGreaterThanOrEqual(4);
    for (const sample of ok) expect(sample.labels.command).toMatch(/^[a-z]+$/);
    const errors = afterRedisLoss.find('vgw_redis_command_errors_total').reduce((sum, s) => sum + s.value, 0);
    expect(errors).toBeGreaterThanOrEqual(1);
  });

  it('counts token renewal failures by kind; no expiry gauge while no token is held', () => {
    expect(memoryScrape.value('vgw_token_renewal_failures_total', { reason: 'credentials_rejected' })).toBe(1);
    expect(memoryScrape.find('vgw_token_expiry_seconds')).toEqual([]);
  });

  it('keeps the Node.js default metrics under their standard names', () => {
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(scrape.types.has(name)).toBe(true);
    }
    expect(
      [...scrape.types.keys()].filter((name) => name.startsWith('vgw_process') || name.startsWith('vgw_nodejs')),
    ).toEqual([]);
  });

  itWith(promtool())('passes promtool check metrics', () => {
    const { status, output } = runPromtool(['check', 'metrics'], text);
    // Its lint flags prom-client's Node.js defaults named *_total that are gauges
    // (nodejs_active_handles_total, …), kept under their standard names on purpose so stock
    // dashboards work; nothing else may be flagged, and the text must parse.
    const standardName = /^nodejs_\w+_total non-counter metrics should not have "_total" suffix$/;
    const problems = output.split('\n').filter((line) => line !== '');
    expect(problems.filter((line) => !standardName.test(line))).toEqual([]);
    expect(status).toBe(problems.length === 0 ? 0 : 3);
  });
});
