/**
 * The chart's alerts in a real Prometheus (Debian's `prometheus`), scraping a real gateway every
 * second with the rules the chart renders (helm template): a single unknown outcome after a fresh
 * start raises InquiriesWithUnknownOutcome, because its series is exported at 0 before it (a
 * counter first scraped at 1 would show increase() no rise); Redis stopped sends
 * VerificationGatewayStoreDown pending. Prometheus runs on a free loopback port with its data in a
 * temporary directory, and every wait is a bounded poll of its API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from '@jest/globals';
import { parseAllDocuments, stringify } from 'yaml';
import { CHART_DIR, ensureHelm, helm } from './support/helm.js';
import { prometheusServer } from './support/prometheus.js';
import { TEST_CLIENTS, callGateway, startGateway, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { RedisServer, freePort } from './support/redis-server.js';
import { describeWith } from './support/tools.js';
import { SHAHKAR } from './support/fixtures.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const RELEASE = { namespace: 'kyc', job: 'vgw-verification-gateway' };

describeWith(prometheusServer(), 'alerts in a real Prometheus scraping the gateway', (bin) => {
  let dir: string;
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let prometheus: ChildProcess;
  let api: string;

  /** Polls `read` every 250 ms until `done` holds, for at most `ms`. */
  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
    const giveUpAt = Date.now() + ms;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > giveUpAt) return value;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  const query = async (promql: string) =>
    (
      (await (await fetch(`${api}/api/v1/query?query=${encodeURIComponent(promql)}`)).json()) as {
        data: { result: Array<{ value: [number, string] }> };
      }
    ).data.result;
  const alertState = async (name: string) =>
    (
      (await (await fetch(`${api}/api/v1/alerts`)).json()) as {
        data: { alerts: Array<{ labels: { alertname: string }; state: string }> };
      }
    ).data.alerts.find((a) => a.labels.alertname === name)?.state ?? 'inactive';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vgw-prometheus-'));
    redis = await RedisServer.start();
    sim = new UpstreamSimulator();
    await sim.start();
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '300' });
    await untilStoreReady(gateway);

    const rendered = await helm(await ensureHelm(), [
      'template',
      'vgw',
      CHART_DIR,
      '--namespace',
      RELEASE.namespace,
      '-f',
      join(CHART_DIR, 'ci', 'chart-secret-redis-url-values.yaml'),
    ]);
    if (!rendered.ok) throw new Error(rendered.stderr);
    const rule = parseAllDocuments(rendered.stdout)
      .map((doc) => doc.toJSON() as { kind?: string; spec?: { groups: unknown[] } })
      .find((object) => object?.kind === 'PrometheusRule')!;
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: rule.spec!.groups }));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [join(dir, 'rules.yaml')],
        scrape_configs: [
          {
            // As the ServiceMonitor makes it: the job is the Service's name, the namespace a label.
            job_name: RELEASE.job,
            static_configs: [{ targets: [new URL(gateway.url).host], labels: { namespace: RELEASE.namespace } }],
          },
        ],
      }),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      bin,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    // Scraped at least twice before anything happens: the series' zeros are in the database.
    const scrapes = await until(
      () => query(`count_over_time(up{job="${RELEASE.job}"}[1m])`).catch(() => []),
      (result) => Number(result[0]?.value[1] ?? 0) >= 2,
      30_000,
    );
    expect(Number(scrapes[0]?.value[1] ?? 0)).toBeGreaterThanOrEqual(2);
    // The gateway holds its upstream token (fetched in the background, under the same 300 ms
    // timeout; on a loaded machine the first attempt can miss it and is retried): the inquiry
    // below then makes only the call that outlives its deadline.
    const token = await until(
      () => query(`vgw_token_expiry_seconds{job="${RELEASE.job}"}`).catch(() => []),
      (result) => result.length > 0,
      30_000,
    );
    expect(token).toHaveLength(1);
  }, 90_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = once(prometheus, 'exit');
      prometheus.kill('SIGTERM');
      await exited;
    }
    await gateway?.close();
    await sim?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('raises InquiriesWithUnknownOutcome on the first unknown outcome after a start', async () => {
    expect(await alertState('InquiriesWithUnknownOutcome')).toBe('inactive');
    // The upstream answers after the gateway's 300 ms deadline: outcome unknown (504).
    sim.setLatency(1_000);
    const answer = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    });
    sim.setLatency(0);
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 504, code: 'upstream_timeout' });
    expect(
      await until(
        () => alertState('InquiriesWithUnknownOutcome'),
        (s) => s === 'firing',
        30_000,
      ),
    ).toBe('firing');
  }, 45_000);

  it('sends VerificationGatewayStoreDown pending when Redis stops', async () => {
    expect(await alertState('VerificationGatewayStoreDown')).toBe('inactive');
    await redis.kill();
    expect(
      await until(
        () => alertState('VerificationGatewayStoreDown'),
        (s) => s !== 'inactive',
        30_000,
      ),
    ).toBe('pending');
  }, 45_000);
});
