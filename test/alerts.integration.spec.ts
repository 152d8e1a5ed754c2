/**
 * The chart's alerts and dashboard (docs/runbooks.md), as the chart renders them:
 * - `promtool check rules` on the PrometheusRule's groups, and `promtool test rules` proving each
 *   alert fires on the series that should trigger it and stays quiet on healthy ones, and on
 *   another release's series;
 * - every alert links a section of docs/runbooks.md that exists;
 * - every dashboard query parses (promtool), and every metric the alerts and the dashboard
 *   use is one the gateway really exports (a scrape of a running gateway), so renaming a
 *   metric breaks this test instead of silently blanking a panel or an alert.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments, stringify } from 'yaml';
import { CHART_DIR, ensureHelm, helm } from './support/helm.js';
import { parseExposition, promtool } from './support/prometheus.js';
import { apiKeysWith, startGateway } from './support/gateway.js';
import { itWith } from './support/tools.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface Dashboard {
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
}

/** The labels every series of this release carries (helm template vgw … --namespace kyc). */
const L = 'namespace="kyc", job="vgw-verification-gateway"';

/**
 * promtool unit tests: per alert, input series (1-minute steps) and whether it fires at `at`.
 * Healthy cases sit next to the firing ones, so an expression that always fires fails here.
 */
const CASES: Array<{
  alert: string;
  name: string;
  series: Record<string, string>;
  at: string;
  fires: boolean;
  /** Labels the firing alert carries beside the rule's own (an aggregation's `by` labels). */
  labels?: Record<string, string>;
}> = [
  {
    alert: 'VerificationGatewayDown',
    name: 'no pod up',
    series: { [`up{${L}, pod="a"}`]: '0x10' },
    at: '6m',
    fires: true,
  },
  {
    alert: 'VerificationGatewayDown',
    name: 'a pod up',
    series: { [`up{${L}, pod="a"}`]: '1x10' },
    at: '6m',
    fires: false,
  },
  ...[
    ['10 % 5xx', '0+10x20', true],
    ['1 % 5xx', '0+1x20', false],
  ].map(([name, errors, fires]) => ({
    alert: 'VerificationGatewayHigh5xxRatio',
    name: name as string,
    series: {
      [`vgw_http_request_duration_seconds_count{${L}, route="/v1/kyc/shahkar", method="POST", status="200", code=""}`]:
        '0+100x20',
      [`vgw_http_request_duration_seconds_count{${L}, route="/v1/kyc/shahkar", method="POST", status="502", code="upstream_error"}`]:
        errors as string,
      // Probes failing during a rollout are not API errors.
      [`vgw_http_request_duration_seconds_count{${L}, route="/health/ready", method="GET", status="503", code="not_ready"}`]:
        '0+1000x20',
    },
    at: '16m',
    fires: fires as boolean,
  })),
  ...[
    ['answers of about 5 s', '0x20', true],
    ['answers under 0.5 s', '0+10x20', false],
  ].map(([name, fast, fires]) => ({
    alert: 'VerificationGatewayHighLatency',
    name: name as string,
    series: {
      [`vgw_http_request_duration_seconds_bucket{${L}, route="/v1/kyc/iban", le="0.5"}`]: fast as string,
      [`vgw_http_request_duration_seconds_bucket{${L}, route="/v1/kyc/iban", le="5"}`]: '0+10x20',
      [`vgw_http_request_duration_seconds_bucket{${L}, route="/v1/kyc/iban", le="+Inf"}`]: '0+10x20',
    },
    at: '16m',
    fires: fires as boolean,
  })),
  {
    alert: 'UpstreamCircuitOpen',
    name: 'open',
    series: { [`vgw_upstream_circuit_open{${L}, pod="a"}`]: '1x10' },
    at: '5m',
    fires: true,
  },
  {
    alert: 'UpstreamCircuitOpen',
    name: 'closed',
    series: { [`vgw_upstream_circuit_open{${L}, pod="a"}`]: '0x10' },
    at: '5m',
    fires: false,
  },
  {
    alert: 'UpstreamCircuitOpen',
    name: "another release's breaker",
    series: { 'vgw_upstream_circuit_open{namespace="kyc", job="other-gateway", pod="a"}': '1x10' },
    at: '5m',
    fires: false,
  },
  {
    alert: 'UpstreamCreditExhausted',
    name: 'a 402',
    series: {
      [`vgw_upstream_call_duration_seconds_count{${L}, operation="shahkar", outcome="http_402"}`]: '0 0 0 1 2 3',
    },
    at: '5m',
    fires: true,
  },
  {
    alert: 'UpstreamCreditExhausted',
    name: 'successes only',
    series: { [`vgw_upstream_call_duration_seconds_count{${L}, operation="shahkar", outcome="success"}`]: '0+10x10' },
    at: '5m',
    fires: false,
  },
  ...[
    ['failures and no success', '5x30', true],
    ['failures then a success', '0+1x30', false],
  ].map(([name, successes, fires]) => ({
    alert: 'UpstreamTokenRenewalFailing',
    name: name as string,
    series: {
      [`vgw_token_renewal_failures_total{${L}, pod="a", reason="upstream_failure"}`]: '0+1x30',
      [`vgw_token_renewals_total{${L}, pod="a", grant="refresh", result="success"}`]: successes as string,
    },
    at: '22m',
    fires: fires as boolean,
  })),
  {
    alert: 'UpstreamTokenExpiring',
    name: '100 s left',
    series: { [`vgw_token_expiry_seconds{${L}, pod="a", token="access"}`]: '100x10' },
    at: '5m',
    fires: true,
  },
  {
    alert: 'UpstreamTokenExpiring',
    name: 'hours left',
    series: { [`vgw_token_expiry_seconds{${L}, pod="a", token="access"}`]: '20000x10' },
    at: '5m',
    fires: false,
  },
  {
    alert: 'InquiriesWithUnknownOutcome',
    name: 'one unknown',
    series: { [`vgw_inquiries_total{${L}, operation="shahkar", status="unknown"}`]: '0 0 1 1 1' },
    at: '4m',
    fires: true,
  },
  {
    alert: 'InquiriesWithUnknownOutcome',
    name: 'all settled',
    series: {
      [`vgw_inquiries_total{${L}, operation="shahkar", status="unknown"}`]: '0x10',
      [`vgw_inquiries_total{${L}, operation="shahkar", status="succeeded"}`]: '0+10x10',
    },
    at: '4m',
    fires: false,
  },
  ...[
    ['entries waiting 20 minutes', '0+60x30', true],
    ['entries written at once', '0x30', false],
  ].map(([name, age, fires]) => ({
    alert: 'LedgerBacklog',
    name: name as string,
    series: { [`vgw_ledger_queue_oldest_age_seconds{${L}, pod="a"}`]: age as string },
    at: '25m',
    fires: fires as boolean,
  })),
  ...[
    ['an entry parked on a gateway pod', `vgw_ledger_entries_parked_total{${L}, pod="a"}`, '0 0 1 1 1', true],
    [
      'an entry parked on a drainer pod',
      'vgw_ledger_entries_parked_total{namespace="kyc", job="vgw-verification-gateway-ledger-drainer", pod="d"}',
      '0 0 1 1 1',
      true,
    ],
    ['none parked', `vgw_ledger_entries_parked_total{${L}, pod="a"}`, '0x10', false],
    [
      "another release's drainer",
      'vgw_ledger_entries_parked_total{namespace="other", job="vgw-verification-gateway-ledger-drainer", pod="d"}',
      '0 0 1 1 1',
      false,
    ],
  ].map(([name, series, values, fires]) => ({
    alert: 'LedgerEntriesParked',
    name: name as string,
    series: { [series as string]: values as string },
    at: '4m',
    fires: fires as boolean,
  })),
  ...[
    ['a worker re-created', '0 0 1 1 1', true],
    ['none re-created', '0x10', false],
  ].map(([name, series, fires]) => ({
    alert: 'LedgerWorkerRestarted',
    name: name as string,
    series: { [`vgw_ledger_worker_restarts_total{${L}, pod="a"}`]: series as string },
    at: '4m',
    fires: fires as boolean,
  })),
  ...[
    ['no drainer pod up', '0x10', true],
    ['one drainer pod up', '1x10', false],
  ].map(([name, up, fires]) => ({
    alert: 'LedgerDrainerDown',
    name: name as string,
    // The drainer pods' job (its headless Service); the gateway's own pods being up changes nothing.
    series: {
      [`up{namespace="kyc", job="vgw-verification-gateway-ledger-drainer", pod="d"}`]: up as string,
      [`up{${L}, pod="a"}`]: '1x10',
    },
    at: '6m',
    fires: fires as boolean,
  })),
  ...[
    ['two unknowns older than a day for 30 minutes', '2x40', true],
    ['none', '0x40', false],
    ['one that a reconciliation resolved within 30 minutes', '1x20 0x20', false],
  ].map(([name, series, fires]) => ({
    alert: 'LedgerUnknownsOlderThanADay',
    name: name as string,
    series: { [`vgw_ledger_unknowns_older_than_a_day{${L}, pod="a"}`]: series as string },
    at: '35m',
    fires: fires as boolean,
  })),
  ...[
    ['one unsent charge found', '0 0 1 1 1', true],
    ['none found', '0x10', false],
  ].map(([name, series, fires]) => ({
    alert: 'ReconciliationUnsentCharges',
    name: name as string,
    series: { [`vgw_reconciliation_unsent_charges_total{${L}, pod="a"}`]: series as string },
    at: '4m',
    fires: fires as boolean,
  })),
  ...[
    ['an endpoint waiting 20 minutes', '1200x10', true],
    ['an endpoint waiting 5 minutes', '300x10', false],
  ].map(([name, age, fires]) => ({
    alert: 'WebhookDeliveriesStuck',
    name: name as string,
    series: { [`vgw_webhook_oldest_pending_seconds{${L}, pod="a", endpoint="billing"}`]: age as string },
    at: '6m',
    fires: fires as boolean,
    labels: { endpoint: 'billing' },
  })),
  ...[
    ['a delivery dead', '0 0 1 1 1', true],
    ['none dead', '0x10', false],
  ].map(([name, series, fires]) => ({
    alert: 'WebhookDeliveriesDead',
    name: name as string,
    series: { [`vgw_webhook_deliveries_total{${L}, pod="a", endpoint="billing", result="dead"}`]: series as string },
    at: '4m',
    fires: fires as boolean,
    labels: { endpoint: 'billing' },
  })),
  ...[
    ['one pod without Redis', '0x10', true],
    ['both pods with Redis', '1x10', false],
  ].map(([name, a, fires]) => ({
    alert: 'VerificationGatewayStoreDown',
    name: name as string,
    series: { [`vgw_store_up{${L}, pod="a"}`]: a as string, [`vgw_store_up{${L}, pod="b"}`]: '1x10' },
    at: '5m',
    fires: fires as boolean,
  })),
  ...[
    ['2 errors/s', '0+120x30', true],
    ['0.1 errors/s', '0+6x30', false],
  ].map(([name, errors, fires]) => ({
    alert: 'VerificationGatewayRedisErrors',
    name: name as string,
    series: { [`vgw_redis_command_errors_total{${L}, pod="a", command="set"}`]: errors as string },
    at: '20m',
    fires: fires as boolean,
  })),
  ...(['unavailable', 'stale'] as const).flatMap((state) =>
    [true, false].map((fires) => ({
      alert: state === 'unavailable' ? 'JwksUnavailable' : 'JwksStale',
      name: fires ? state : 'ok',
      series: {
        [`vgw_jwks_state{${L}, pod="a", state="${state}"}`]: fires ? '1x30' : '0x30',
        [`vgw_jwks_state{${L}, pod="a", state="ok"}`]: fires ? '0x30' : '1x30',
      },
      at: '20m',
      fires,
    })),
  ),
  ...[
    ['10 rejections/s', '0+600x30', true],
    ['1 rejection/s', '0+60x30', false],
  ].map(([name, rejections, fires]) => ({
    alert: 'QuotaRejectionsSurging',
    name: name as string,
    series: { [`vgw_quota_rejections_total{${L}, pod="a", scope="client"}`]: rejections as string },
    at: '20m',
    fires: fires as boolean,
  })),
  ...[
    ['a rejected API keys file', '0 0 1 1 1 1 1', true],
    ['every file applied', '0x6', false],
  ].map(([name, rejected, fires]) => ({
    alert: 'SecretFileRejected',
    name: name as string,
    series: { [`vgw_secret_file_rejected{${L}, pod="a", variable="API_KEYS_FILE"}`]: rejected as string },
    at: '6m',
    fires: fires as boolean,
  })),
  ...[
    ['85 % used (spent and reserved)', '40x10', true],
    ['half used', '22x10', false],
  ].map(([name, spent, fires]) => ({
    alert: 'BudgetNearlyExhausted',
    name: name as string,
    series: {
      [`vgw_budget_limit_units{${L}, pod="a", client="svc-a", window="daily"}`]: '50x10',
      [`vgw_budget_spent_units{${L}, pod="a", client="svc-a", window="daily"}`]: spent as string,
      [`vgw_budget_reserved_units{${L}, pod="a", client="svc-a", window="daily"}`]: '3x10',
    },
    at: '8m',
    fires: fires as boolean,
    labels: { client: 'svc-a', window: 'daily' },
  })),
  ...[
    ['all units spent', '50x10', '0x10', true],
    ['a refusal with units left (an advanced inquiry did not fit)', '48x10', '0 0 0 1 1 1 1 1 1 1 1', true],
    ['units left, nothing refused', '30x10', '0x10', false],
  ].map(([name, spent, refusals, fires]) => ({
    alert: 'BudgetExhausted',
    name: name as string,
    series: {
      [`vgw_budget_limit_units{${L}, pod="a", client="*", window="monthly"}`]: '50x10',
      [`vgw_budget_spent_units{${L}, pod="a", client="*", window="monthly"}`]: spent as string,
      [`vgw_budget_reserved_units{${L}, pod="a", client="*", window="monthly"}`]: '0x10',
      [`vgw_budget_refusals_total{${L}, pod="a", client="*", window="monthly"}`]: refusals as string,
    },
    at: '5m',
    fires: fires as boolean,
    labels: { client: '*', window: 'monthly' },
  })),
];

/** Metric names in a PromQL expression (ours and the Node/process ones; `up` is Prometheus's). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:vgw|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]);
}

describe('alerts and dashboard', () => {
  let dir: string;
  const withPromtool = itWith(promtool()); // skipped without it, failed in CI (support/tools.ts)
  let rules: Rule[];
  let groups: unknown;
  let dashboard: Dashboard;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vgw-alerts-'));
    const bin = await ensureHelm();
    const result = await helm(bin, [
      'template',
      'vgw',
      CHART_DIR,
      '--namespace',
      'kyc',
      '-f',
      join(CHART_DIR, 'ci', 'chart-secret-redis-url-values.yaml'),
    ]);
    if (!result.ok) throw new Error(result.stderr);
    const objects = parseAllDocuments(result.stdout).map(
      (doc) =>
        doc.toJSON() as { kind: string; spec?: { groups: Array<{ rules: Rule[] }> }; data?: Record<string, string> },
    );
    const rule = objects.find((o) => o?.kind === 'PrometheusRule')!;
    groups = rule.spec!.groups;
    rules = rule.spec!.groups.flatMap((g) => g.rules);
    const configMap = objects.find((o) => o?.kind === 'ConfigMap' && o.data?.['verification-gateway.json'])!;
    dashboard = JSON.parse(configMap.data!['verification-gateway.json']) as Dashboard;
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
  }, 120_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has the alerts the runbooks describe, each with a severity and a runbook section that exists', () => {
    const runbooks = readFileSync(new URL('../docs/runbooks.md', import.meta.url), 'utf8');
    const anchors = new Set([...runbooks.matchAll(/^## (.+)$/gm)].map((m) => m[1].toLowerCase()));
    expect(rules.map((r) => r.alert).sort()).toEqual([...new Set(CASES.map((c) => c.alert))].sort());
    for (const rule of rules) {
      expect(['critical', 'warning']).toContain(rule.labels.severity);
      expect(rule.annotations.summary).toBeTruthy();
      const [base, anchor] = rule.annotations.runbook_url.split('#');
      expect(base).toMatch(/^https:\/\/.+\/docs\/runbooks\.md$/);
      expect({ alert: rule.alert, section: anchors.has(anchor) }).toEqual({ alert: rule.alert, section: true });
      // Scoped to this release: another deployment's gateway never pages this one's owners.
      expect(rule.expr).toContain(
        rule.alert === 'LedgerDrainerDown' ? 'namespace="kyc", job="vgw-verification-gateway-ledger-drainer"' : L,
      );
    }
  });

  withPromtool('passes promtool check rules', (tool) => {
    const check = spawnSync(tool, ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8' });
    expect({ status: check.status, output: check.stdout + check.stderr }).toMatchObject({ status: 0 });
    expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  withPromtool('fires each alert on the series that should trigger it, and only those (promtool test)', (tool) => {
    const byName = new Map(rules.map((r) => [r.alert, r]));
    const tests = CASES.map((c) => {
      const rule = byName.get(c.alert)!;
      return {
        name: `${c.alert}: ${c.name}`,
        interval: '1m',
        input_series: Object.entries(c.series).map(([series, values]) => ({ series, values })),
        alert_rule_test: [
          {
            eval_time: c.at,
            alertname: c.alert,
            exp_alerts: c.fires
              ? [{ exp_labels: { ...rule.labels, ...c.labels }, exp_annotations: rule.annotations }]
              : [],
          },
        ],
      };
    });
    writeFileSync(join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const run = spawnSync(tool, ['test', 'rules', join(dir, 'tests.yaml')], { encoding: 'utf8' });
    // On failure, the received output is promtool's account of each case that went wrong.
    expect({ status: run.status, output: run.stdout + run.stderr }).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS'),
    });
  });

  it('has dashboard queries', () => {
    expect(dashboard.panels.flatMap((p) => p.targets ?? []).length).toBeGreaterThan(20);
  });

  withPromtool('has dashboard queries that all parse (promtool)', (tool) => {
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    // Grafana's variables become concrete values, each query a recording rule promtool parses.
    const concrete = exprs.map((e) =>
      e.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', 'kyc').replaceAll('$job', 'vgw'),
    );
    const file = join(dir, 'dashboard-rules.yaml');
    writeFileSync(
      file,
      stringify({
        groups: [{ name: 'dashboard', rules: concrete.map((expr, i) => ({ record: `dashboard:query_${i}`, expr })) }],
      }),
    );
    const check = spawnSync(tool, ['check', 'rules', file], { encoding: 'utf8' });
    expect({ status: check.status, output: check.stdout + check.stderr }).toMatchObject({ status: 0 });
  });

  it('uses only metrics the gateway exports', async () => {
    const sim = new UpstreamSimulator();
    await sim.start();
    // With a JWKS URL the identity-provider gauges exist (the URL is never fetched until a JWT
    // arrives); with a secret file, the secret-file series.
    const keysFile = join(dir, 'api-keys.json');
    writeFileSync(keysFile, apiKeysWith());
    const gateway = await startGateway({
      API_KEYS: undefined,
      API_KEYS_FILE: keysFile,
      UPSTREAM_BASE_URL: sim.baseUrl,
      JWT_JWKS_URL: 'http://127.0.0.1:9/jwks',
      JWT_ISSUER: 'https://idp.example.com',
      JWT_AUDIENCE: 'verification-gateway',
    }).catch(async (error: Error) => {
      await sim.stop();
      throw error;
    });
    try {
      const exposition = parseExposition(await (await fetch(`${gateway.url}/metrics`)).text());
      const families = new Set(exposition.types.keys());
      const exported = (name: string) =>
        families.has(name) || families.has(name.replace(/_(bucket|count|sum|total)$/, ''));
      const used = new Set([
        ...rules.flatMap((r) => metricNames(r.expr)),
        ...dashboard.panels.flatMap((p) => p.targets ?? []).flatMap((t) => metricNames(t.expr)),
      ]);
      expect(used.size).toBeGreaterThan(15);
      expect([...used].filter((name) => !exported(name))).toEqual([]);
    } finally {
      await gateway.close();
      await sim.stop();
    }
  });
});
