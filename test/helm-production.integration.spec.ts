/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return */
/**
 * The chart as the README's production path installs it (helm/verification-gateway/
 * values-production.yaml), checked on the rendered objects: lint, Kubernetes schemas, and the
 * consistency a real cluster needs (policies, users, ports, image, probes). Then the values
 * schema: every key of the production file misspelt must fail the render (a generated set),
 * and the defaults that used to break a first install: image.repository, the NetworkPolicy's
 * ports and ingress controller, NOTES for both port layouts, runbooks without a base URL.
 */
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { CHART_DIR, ensureHelm, helm } from './support/helm.js';
import { KubernetesSchema, type KubernetesObject } from './support/kubernetes-schema.js';

const PRODUCTION = join(CHART_DIR, 'values-production.yaml');
const DOCKERFILE = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');

// Rendered manifests are walked by path; each assertion checks the shape it reads.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

/** Maps whose keys are free (labels, annotations, resource names): a new key there is no typo. */
const FREE_KEYS = new Set(['annotations', 'labels', 'matchLabels', 'nodeSelector', 'limits', 'requests']);

/** Every key path of a values document (list items included), except keys of free maps. */
function keyPaths(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) return value.flatMap((item, i) => keyPaths(item, [...path, i]));
  if (value === null || typeof value !== 'object') return [];
  const parent = path.at(-1);
  if (typeof parent === 'string' && FREE_KEYS.has(parent)) return [];
  return Object.entries(value as Obj).flatMap(([key, child]) => [[...path, key], ...keyPaths(child, [...path, key])]);
}

/** A plausible typo: the last letter dropped (`limits` → `limit`), or doubled when that is another key. */
function misspell(key: string, siblings: string[]): string {
  const dropped = key.slice(0, -1);
  return dropped.length > 0 && !siblings.includes(dropped) ? dropped : `${key}${key.at(-1)}`;
}

/** A copy of `document` with the key at `path` misspelt; returns the copy and the misspelt key. */
function withTypo(document: Obj, path: Array<string | number>): { values: Obj; typo: string } {
  const values = structuredClone(document);
  let node: Obj = values;
  for (const step of path.slice(0, -1)) node = node[step] as Obj;
  const key = String(path.at(-1));
  const typo = misspell(key, Object.keys(node));
  const entries = Object.entries(node).map(([k, v]) => [k === key ? typo : k, v] as const);
  for (const k of Object.keys(node)) delete node[k];
  Object.assign(node, Object.fromEntries(entries));
  return { values, typo };
}

describe('Helm chart: the production path', () => {
  let bin: string;
  let objects: KubernetesObject[];
  let work: string;
  const byKind = <T = Obj>(kind: string): T => objects.find((o) => o.kind === kind) as T;

  async function template(args: string[], chart = CHART_DIR) {
    const result = await helm(bin, ['template', 'vgw', chart, '--namespace', 'kyc', ...args]);
    const docs = result.ok
      ? parseAllDocuments(result.stdout)
          .map((doc) => doc.toJSON() as KubernetesObject | null)
          .filter((o): o is KubernetesObject => o !== null)
      : [];
    return { ok: result.ok, objects: docs, error: result.stderr };
  }

  beforeAll(async () => {
    bin = await ensureHelm();
    work = mkdtempSync(join(tmpdir(), 'vgw-chart-prod-'));
    const result = await template(['-f', PRODUCTION]);
    if (!result.ok) throw new Error(`values-production.yaml does not render: ${result.error}`);
    objects = result.objects;
  }, 120_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('passes helm lint --strict and renders objects valid against the Kubernetes schemas', async () => {
    const lint = await helm(bin, ['lint', '--strict', CHART_DIR, '-f', PRODUCTION]);
    expect({ ok: lint.ok, output: lint.ok ? '' : lint.stdout + lint.stderr }).toEqual({ ok: true, output: '' });
    const schema = KubernetesSchema.load(objects);
    for (const object of objects) {
      const name = `${object.kind}/${object.metadata?.name}`;
      expect({ name, problems: await schema.problems(object) }).toEqual({ name, problems: [] });
    }
  }, 120_000);

  it('runs as the image’s own user: one uid/gid in the Dockerfile and the pod', () => {
    const [, uid, gid] = /^USER (\d+):(\d+)$/m.exec(DOCKERFILE)!;
    const pod = byKind('Deployment').spec.template.spec as Obj;
    expect(pod.securityContext).toMatchObject({ runAsUser: +uid, runAsGroup: +gid, fsGroup: +gid, runAsNonRoot: true });
    const defaults = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Obj;
    expect(defaults.podSecurityContext).toMatchObject({ runAsUser: +uid, runAsGroup: +gid, fsGroup: +gid });
    expect(pod.containers[0].securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
  });

  it('pins the configured image and probes the ports the gateway listens on', () => {
    const pod = byKind('Deployment').spec.template.spec as Obj;
    const gateway = pod.containers[0] as Obj;
    expect(gateway.image).toBe(
      'registry.example.com/platform/verification-gateway:0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000000',
    );
    const ports = Object.fromEntries((gateway.ports as Obj[]).map((p) => [p.name, p.containerPort]));
    const config = byKind('ConfigMap').data as Record<string, string>;
    expect(ports).toEqual({ http: Number(config.PORT), ops: Number(config.OPS_PORT) });
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      expect(gateway[probe].httpGet.port).toBe('http');
    }
    const service = byKind('Service').spec.ports as Obj[];
    expect(service.map((p) => p.targetPort).sort()).toEqual(['http', 'ops']);
    expect(byKind('ServiceMonitor').spec.endpoints[0].port).toBe('ops');
    // The Ingress publishes the API port only.
    const ingress = byKind('Ingress').spec.rules[0].http.paths[0].backend.service.port;
    expect(ingress).toEqual({ name: 'http' });
  });

  it('admits the ingress controller and Prometheus, and reaches Redis, PostgreSQL, the upstream and DNS on their ports', () => {
    const policy = byKind('NetworkPolicy').spec as Obj;
    const [callers, scrapes] = policy.ingress as Obj[];
    expect(callers.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(callers.from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
      },
    ]);
    expect(scrapes.ports).toEqual([{ port: 'ops', protocol: 'TCP' }]);
    const egressPorts = (policy.egress as Obj[]).map((rule) => (rule.ports as Obj[]).map((p) => p.port));
    // DNS; Redis: the Sentinels' 26379 and the data nodes' 6379; the ledger's PostgreSQL on 5432;
    // upstream and JWKS over 443.
    expect(egressPorts).toEqual([[53, 53], [26379, 6379], [5432], [443]]);
    expect((policy.egress as Obj[])[2].to).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'postgres' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'postgresql' } },
      },
    ]);
  });

  it('derives egress ports from the URLs: an http://…:8080 upstream and a Redis on 6380 are reachable', async () => {
    const result = await template([
      '-f',
      PRODUCTION,
      '--set',
      'upstream.baseUrl=http://upstream-sim.kyc.svc:8080',
      '--set',
      'jwt.jwksUrl=http://id.kyc.svc/jwks.json',
      '--set',
      'redis.sentinels=null',
      '--set',
      'redis.url=redis://redis.redis.svc:6380/0',
    ]);
    expect(result.error).toBe('');
    const policy = result.objects.find((o) => o.kind === 'NetworkPolicy') as Obj;
    const egressPorts = (policy.spec.egress as Obj[]).map((rule) => (rule.ports as Obj[]).map((p) => p.port));
    expect(egressPorts).toEqual([[53, 53], [6380], [5432], [80, 8080]]);
  });

  it('refuses an Ingress behind a NetworkPolicy that names no ingress controller', async () => {
    const result = await template([
      '-f',
      PRODUCTION,
      '--set',
      'networkPolicy.ingress.controller.namespaceSelector=null',
      '--set',
      'networkPolicy.ingress.controller.podSelector=null',
    ]);
    expect(result.ok).toBe(false);
    expect(result.error).toContain('needs networkPolicy.ingress.controller');
  });

  it('requires image.repository with a clear message instead of rendering a placeholder', async () => {
    const result = await template(['-f', PRODUCTION, '--set', 'image.repository=']);
    expect(result.ok).toBe(false);
    expect(result.error).toContain('image.repository is required');
    const defaults = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Obj;
    expect(defaults.image.repository).toBe('');
  });

  it('puts the runbook’s steps in each alert without a base URL, and runbook_url only with one', async () => {
    const rules = (objs: KubernetesObject[]) =>
      ((objs.find((o) => o.kind === 'PrometheusRule') as Obj).spec.groups as Obj[]).flatMap((g) => g.rules as Obj[]);
    const runbooks = readFileSync(new URL('../docs/runbooks.md', import.meta.url), 'utf8');
    for (const rule of rules(objects)) {
      expect(rule.annotations.runbook_url).toBeUndefined();
      const section = runbooks.split(`## ${rule.alert}\n`)[1]?.split(/^## /m)[0].trim();
      expect({ alert: rule.alert, runbook: rule.annotations.runbook as string }).toEqual({
        alert: rule.alert,
        runbook: section,
      });
    }
    const base = 'https://git.example.com/platform/verification-gateway/-/blob/v0.1.0/docs/runbooks.md';
    const linked = await template(['-f', PRODUCTION, '--set', `prometheusRule.runbookBaseUrl=${base}`]);
    for (const rule of rules(linked.objects)) {
      expect(rule.annotations.runbook_url).toBe(`${base}#${String(rule.alert).toLowerCase()}`);
      expect(rule.annotations.runbook).toBeUndefined();
    }
  });

  it('names the right port for /metrics and /docs in NOTES, with and without config.opsPort', async () => {
    // helm template does not print NOTES.txt: render it as a ConfigMap in a copy of the chart.
    const chart = join(work, 'notes-chart');
    cpSync(CHART_DIR, chart, { recursive: true });
    renameSync(join(chart, 'templates', 'NOTES.txt'), join(chart, 'NOTES.txt'));
    writeFileSync(
      join(chart, 'templates', 'notes.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ tpl (.Files.Get "NOTES.txt") . | toJson }}\n',
    );
    const notes = async (args: string[]) => {
      const result = await template(['-f', PRODUCTION, '--show-only', 'templates/notes.yaml', ...args], chart);
      if (!result.ok) throw new Error(result.error);
      return String((result.objects[0] as Obj).data.notes);
    };
    const ops = await notes([]);
    expect(ops).toContain('port-forward svc/vgw-verification-gateway 8080:80 9090:9090');
    expect(ops).toContain('curl -s localhost:9090/metrics');
    expect(ops).toContain('http://localhost:9090/docs');
    expect(ops).not.toContain('localhost:8080/metrics');
    const single = await notes(['--set', 'config.opsPort=null']);
    expect(single).toContain('curl -s localhost:8080/metrics');
    expect(single).toContain('http://localhost:8080/docs');
    expect(single).not.toContain('9090');
  });

  it('rejects every key of the production values misspelt, at any depth (generated)', async () => {
    const document = parse(readFileSync(PRODUCTION, 'utf8')) as Obj;
    const paths = keyPaths(document);
    expect(paths.length).toBeGreaterThan(150);
    // Deep ones among them, inside Kubernetes objects.
    expect(paths.map((p) => p.join('.'))).toEqual(
      expect.arrayContaining([
        'resources.limits',
        'securityContext.readOnlyRootFilesystem',
        'extraEnv.0.name',
        'extraEnv.1.valueFrom.fieldRef.fieldPath',
        'affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.0.labelSelector.matchLabels',
        'networkPolicy.egress.upstream.to.0.ipBlock.cidr',
      ]),
    );
    const accepted: string[] = [];
    const run = async (path: Array<string | number>) => {
      const { values, typo } = withTypo(document, path);
      const file = join(work, `typo-${path.join('.')}.yaml`);
      writeFileSync(file, stringify(values));
      const result = await helm(bin, ['template', 'vgw', CHART_DIR, '--namespace', 'kyc', '-f', file]);
      const rejected = !result.ok && result.stderr.includes("values don't meet the specifications of the schema");
      if (!rejected) accepted.push(`${path.join('.')} → ${typo}: ${result.ok ? 'rendered' : result.stderr.trim()}`);
      rmSync(file);
    };
    const queue = [...paths];
    await Promise.all(
      [0, 1].map(async () => {
        for (let p = queue.shift(); p; p = queue.shift()) await run(p);
      }),
    );
    expect(accepted).toEqual([]);
  }, 300_000);
});
