/**
 * The Helm chart (helm/verification-gateway) with a real helm: lint, renders of the
 * default values and of every file in ci/, every rendered object checked against the
 * Kubernetes schemas (unknown fields included), and the render-time guards.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, ensureHelm, helm } from './support/helm.js';
import { KubernetesSchema, type KubernetesObject } from './support/kubernetes-schema.js';

const CI_FILES = readdirSync(join(CHART_DIR, 'ci'))
  .filter((name) => name.endsWith('.yaml'))
  .sort();

/** A minimal valid configuration given on the command line: one replica, existing Secrets. */
const VALID = [
  '--set',
  'image.repository=registry.example.com/platform/verification-gateway',
  '--set',
  'upstream.baseUrl=https://verify.example.com',
  '--set',
  'upstream.credentials.existingSecret=vgw-upstream',
  '--set',
  'apiKeys.existingSecret=vgw-api-keys',
  '--set',
  'replicaCount=1',
];

/** One added operation (docs/api.md, "Operations the operator adds") on the command line, and its prices beside the built-ins'. */
const OPERATION = [
  '--set-json',
  'operations=[{"name":"card-to-iban","upstreamPath":"/api/v5/KYC/CardToIban","fields":{"cardNumber":{"type":"cardNumber"}}}]',
];
const PRICED = [
  '--set-json',
  'budgets.prices={"shahkar":{"standard":1,"advanced":3},"iban":{"standard":1,"advanced":3},"card-to-iban":{"standard":2,"advanced":4}}',
];

type Container = { name: string; lifecycle?: { preStop?: Record<string, unknown> } };

describe('Helm chart', () => {
  let bin: string;
  let schema: KubernetesSchema;
  const rendered = new Map<string, KubernetesObject[]>();

  async function template(args: string[]): Promise<{ ok: boolean; objects: KubernetesObject[]; error: string }> {
    const result = await helm(bin, ['template', 'vgw', CHART_DIR, '--namespace', 'kyc', ...args]);
    const objects = parseAllDocuments(result.stdout)
      .map((doc) => doc.toJSON() as KubernetesObject | null)
      .filter((o): o is KubernetesObject => o !== null);
    return { ok: result.ok, objects, error: result.stderr };
  }

  function deployment(objects: KubernetesObject[]): { spec: { template: { spec: { containers: Container[] } } } } {
    const found = objects.find((o) => o.kind === 'Deployment');
    if (!found) throw new Error('no Deployment rendered');
    return found as never;
  }

  beforeAll(async () => {
    bin = await ensureHelm();
    for (const file of CI_FILES) {
      // --include-crds/--show-only not needed; helm test hooks render with the rest.
      const result = await template(['-f', join(CHART_DIR, 'ci', file)]);
      if (!result.ok) throw new Error(`${file} does not render: ${result.error}`);
      rendered.set(file, result.objects);
    }
    schema = KubernetesSchema.load([...rendered.values()].flat());
  }, 180_000);

  it('passes helm lint --strict with every ci/ values file', async () => {
    for (const file of CI_FILES) {
      const result = await helm(bin, ['lint', '--strict', CHART_DIR, '-f', join(CHART_DIR, 'ci', file)]);
      expect({ file, ok: result.ok, output: result.ok ? '' : result.stdout + result.stderr }).toEqual({
        file,
        ok: true,
        output: '',
      });
    }
  });

  it('refuses the default values with clear messages (the image, then the upstream URL, are required)', async () => {
    const result = await template([]);
    expect(result.ok).toBe(false);
    expect(result.error).toContain('image.repository is required');
    const withImage = await template(['--set', 'image.repository=registry.example.com/platform/verification-gateway']);
    expect(withImage.ok).toBe(false);
    expect(withImage.error).toContain('upstream.baseUrl (UPSTREAM_BASE_URL) is required');
  });

  it.each(CI_FILES)('renders %s into objects valid against the Kubernetes schemas', async (file) => {
    const objects = rendered.get(file)!;
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['Deployment', 'Service', 'ConfigMap']));
    for (const object of objects) {
      expect({ object: `${object.kind}/${object.metadata?.name}`, problems: await schema.problems(object) }).toEqual({
        object: `${object.kind}/${object.metadata?.name}`,
        problems: [],
      });
    }
  });

  it('renders the optional objects: Ingress, HTTPRoute, helm test pod, init containers and extra volumes', () => {
    const all = [...rendered.values()].flat();
    const kinds = new Set(all.map((o) => o.kind));
    for (const kind of [
      'Ingress',
      'HTTPRoute',
      'Pod',
      'ServiceMonitor',
      'PrometheusRule',
      'NetworkPolicy',
      'HorizontalPodAutoscaler',
    ]) {
      expect(kinds).toContain(kind);
    }
    const testPod = all.find((o) => o.kind === 'Pod') as KubernetesObject & {
      metadata: { annotations: Record<string, string> };
      spec: { containers: Array<{ command: string[] }> };
    };
    expect(testPod.metadata.annotations['helm.sh/hook']).toBe('test');
    expect(testPod.spec.containers[0].command.join(' ')).toContain('/health/ready');
    const withExtras = deployment(rendered.get('chart-secret-redis-url-values.yaml')!) as never as {
      spec: { template: { spec: { initContainers: unknown[]; volumes: Array<{ name: string }> } } };
    };
    expect(withExtras.spec.template.spec.initContainers).toHaveLength(1);
    expect(withExtras.spec.template.spec.volumes.map((v) => v.name)).toContain('ca');
  });

  it('puts /metrics on the ops port when config.opsPort is set: container, Service and ServiceMonitor', () => {
    const objects = rendered.get('chart-secret-redis-url-values.yaml')!;
    // The gateway's own ConfigMap (the budgets have one of their own).
    const byKind = (kind: string): unknown =>
      objects.find((o) => o.kind === kind && !o.metadata?.name?.endsWith('-budgets'));
    expect((byKind('ConfigMap') as { data: Record<string, string> }).data.OPS_PORT).toBe('9090');
    const service = byKind('Service') as { spec: { ports: Array<{ name: string; targetPort: string }> } };
    expect(service.spec.ports.map((p) => [p.name, p.targetPort])).toEqual([
      ['http', 'http'],
      ['ops', 'ops'],
    ]);
    const container = deployment(objects).spec.template.spec.containers[0] as unknown as {
      ports: Array<{ name: string; containerPort: number }>;
    };
    expect(container.ports).toContainEqual(expect.objectContaining({ name: 'ops', containerPort: 9090 }));
    const monitor = byKind('ServiceMonitor') as { spec: { endpoints: Array<{ port: string; path: string }> } };
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: 'ops', path: '/metrics' });
  });

  it('sets the console sign-in, CONSOLE_OIDC_REQUIRE_AT_JWT only when asked for', async () => {
    const oidc = ['-f', join(CHART_DIR, 'ci', 'chart-secret-redis-url-values.yaml')];
    const set = ['--set', 'consoleOidc.issuer=https://id.example.com', '--set', 'consoleOidc.clientId=vgw-console'];
    const config = async (args: string[]) => {
      const result = await template([...oidc, ...set, '--set', 'consoleOidc.audience=vgw-console-api', ...args]);
      expect(result.error).toBe('');
      const found = result.objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata?.name === 'vgw-verification-gateway',
      );
      return (found as KubernetesObject & { data: Record<string, string> }).data;
    };
    const plain = await config([]);
    expect(plain.CONSOLE_OIDC_AUDIENCE).toBe('vgw-console-api');
    expect(plain.CONSOLE_OIDC_REQUIRE_AT_JWT).toBeUndefined();
    expect((await config(['--set', 'consoleOidc.requireAtJwt=true'])).CONSOLE_OIDC_REQUIRE_AT_JWT).toBe('true');
  });

  it('mounts the budgets as BUDGETS_FILE from a ConfigMap of the chart or an existing Secret, never in the environment', () => {
    type Source = { configMap?: { name: string; items: unknown[] }; secret?: { name: string; items: unknown[] } };
    const wiring = (file: string) => {
      const objects = rendered.get(file)!;
      const pod = (
        deployment(objects).spec.template as unknown as {
          spec: {
            containers: Array<{ env: Array<{ name: string; value?: string }> }>;
            volumes: Array<{ name: string; projected?: { sources: Source[] } }>;
          };
        }
      ).spec;
      const env = pod.containers[0].env.find((e) => e.name === 'BUDGETS_FILE');
      const sources = pod.volumes.find((v) => v.name === 'secrets')!.projected!.sources;
      const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'vgw-verification-gateway') as
        (KubernetesObject & { data: Record<string, string> }) | undefined;
      return { objects, env, sources, config: config!.data };
    };
    const inline = wiring('chart-secret-redis-url-values.yaml');
    expect(inline.env?.value).toMatch(/\/budgets\.json$/);
    expect(inline.sources).toContainEqual({
      configMap: { name: 'vgw-verification-gateway-budgets', items: [{ key: 'budgets.json', path: 'budgets.json' }] },
    });
    const budgets = inline.objects.find((o) => o.metadata?.name === 'vgw-verification-gateway-budgets') as unknown as {
      data: Record<string, string>;
    };
    expect(JSON.parse(budgets.data['budgets.json'])).toEqual([
      { clientId: 'billing-svc', daily: 1000, monthly: 20000 },
      { clientId: '*', monthly: 100000 },
    ]);
    expect(inline.config).toMatchObject({ BUDGET_TIMEZONE: 'Asia/Tehran', BUDGET_CALENDAR: 'persian' });
    expect(JSON.parse(inline.config.INQUIRY_PRICES)).toEqual({
      shahkar: { standard: 1, advanced: 3 },
      iban: { standard: 2, advanced: 4 },
      'card-to-iban': { standard: 2, advanced: 5 },
    });
    expect(inline.config.BUDGETS).toBeUndefined();

    const existing = wiring('existing-secrets-sentinel-jwt-values.yaml');
    expect(existing.env).toBeDefined();
    expect(existing.sources).toContainEqual({
      secret: { name: 'vgw-budgets', items: [{ key: 'budgets.json', path: 'budgets.json' }] },
    });
    expect(existing.objects.some((o) => o.metadata?.name === 'vgw-verification-gateway-budgets')).toBe(false);
    // No budgets configured: no file, no variable.
    expect(wiring('single-replica-memory-values.yaml').env).toBeUndefined();
  });

  it('mounts the added operations as INQUIRY_OPERATIONS_FILE from a ConfigMap and rolls the pods when they change', async () => {
    type Source = { configMap?: { name: string; items: unknown[] } };
    type Pod = {
      metadata: { annotations: Record<string, string> };
      spec: {
        containers: Array<{ env: Array<{ name: string; value?: string }> }>;
        volumes: Array<{ name: string; projected?: { sources: Source[] } }>;
      };
    };
    const catalog = (objects: KubernetesObject[]) => {
      const pod = deployment(objects).spec.template as unknown as Pod;
      const map = objects.find((o) => o.metadata?.name === 'vgw-verification-gateway-operations') as
        (KubernetesObject & { data: Record<string, string> }) | undefined;
      return {
        env: pod.spec.containers[0].env.find((e) => e.name === 'INQUIRY_OPERATIONS_FILE')?.value,
        source: pod.spec.volumes
          .find((v) => v.name === 'secrets')!
          .projected!.sources.find((s) => s.configMap?.name === 'vgw-verification-gateway-operations'),
        checksum: pod.metadata.annotations['checksum/operations'],
        operations: map && (JSON.parse(map.data['operations.json']) as unknown),
      };
    };
    const file = 'chart-secret-redis-url-values.yaml';
    const added = catalog(rendered.get(file)!);
    expect(added).toEqual({
      env: '/var/run/secrets/verification-gateway/operations.json',
      source: {
        configMap: {
          name: 'vgw-verification-gateway-operations',
          items: [{ key: 'operations.json', path: 'operations.json' }],
        },
      },
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
      operations: [
        {
          name: 'card-to-iban',
          upstreamPath: '/api/v5/KYC/CardToIban',
          description: 'The IBAN behind a bank card',
          advanced: false,
          fields: { cardNumber: { type: 'cardNumber' } },
        },
      ],
    });
    // Read at start only: an edited entry changes the pod template, so the pods roll.
    const edited = await template(['-f', join(CHART_DIR, 'ci', file), '--set', 'operations[0].advanced=true']);
    expect(edited.error).toBe('');
    expect(catalog(edited.objects).checksum).not.toBe(added.checksum);
    // None configured: no ConfigMap, no variable, no annotation.
    expect(catalog(rendered.get('single-replica-memory-values.yaml')!)).toEqual({
      env: undefined,
      source: undefined,
      checksum: undefined,
      operations: undefined,
    });
  });

  it('wires Redis credentials and TLS as files from Secrets, never into the ConfigMap', () => {
    const objects = rendered.get('cluster-password-tls-values.yaml')!;
    const config = objects.find((o) => o.kind === 'ConfigMap') as KubernetesObject & { data: Record<string, string> };
    expect(config.data).toMatchObject({ REDIS_TLS: 'true', REDIS_CLUSTER_NODES: expect.stringContaining(':6379') });
    expect(Object.keys(config.data).filter((k) => /PASSWORD|KEY_FILE/.test(k))).toEqual([]);
    const pod = deployment(objects).spec.template.spec as unknown as {
      containers: Array<{ env: Array<{ name: string; value?: string }> }>;
      volumes: Array<{ name: string; projected?: { sources: Array<{ secret: { name: string; items: unknown[] } }> } }>;
    };
    const env = Object.fromEntries(pod.containers[0].env.map((e) => [e.name, e.value]));
    const dir = '/var/run/secrets/verification-gateway';
    expect(env).toMatchObject({
      REDIS_PASSWORD_FILE: `${dir}/redis-password`,
      REDIS_TLS_CA_FILE: `${dir}/redis-tls/ca.crt`,
      REDIS_TLS_CERT_FILE: `${dir}/redis-tls/tls.crt`,
      REDIS_TLS_KEY_FILE: `${dir}/redis-tls/tls.key`,
    });
    const sources = pod.volumes.find((v) => v.name === 'secrets')!.projected!.sources.map((s) => s.secret);
    expect(sources).toEqual(
      expect.arrayContaining([
        { name: 'redis-cluster', items: [{ key: 'redis-password', path: 'redis-password' }] },
        {
          name: 'redis-client-tls',
          items: [
            { key: 'ca.crt', path: 'redis-tls/ca.crt' },
            { key: 'tls.crt', path: 'redis-tls/tls.crt' },
            { key: 'tls.key', path: 'redis-tls/tls.key' },
          ],
        },
      ]),
    );
    const sentinel = deployment(rendered.get('existing-secrets-sentinel-jwt-values.yaml')!).spec.template.spec
      .containers[0] as unknown as { env: Array<{ name: string; value?: string }> };
    expect(sentinel.env.map((e) => e.name)).toEqual(
      expect.arrayContaining(['REDIS_PASSWORD_FILE', 'REDIS_SENTINEL_PASSWORD_FILE']),
    );
  });

  it('mounts the ledger database URL from its Secret as LEDGER_DATABASE_URL_FILE and opens egress to PostgreSQL', () => {
    type Pod = {
      containers: Array<{ env: Array<{ name: string; value?: string }> }>;
      volumes: Array<{ name: string; projected?: { sources: Array<{ secret?: { name: string; items: unknown[] } }> } }>;
    };
    const ledger = (file: string) => {
      const pod = deployment(rendered.get(file)!).spec.template.spec as unknown as Pod;
      return {
        env: pod.containers[0].env.find((e) => e.name === 'LEDGER_DATABASE_URL_FILE')?.value,
        secret: pod.volumes
          .find((v) => v.name === 'secrets')
          ?.projected?.sources.find((s) =>
            s.secret?.items.some((i) => (i as { path: string }).path === 'ledger-database-url'),
          )?.secret,
      };
    };
    expect(ledger('cluster-password-tls-values.yaml')).toEqual({
      env: '/var/run/secrets/verification-gateway/ledger-database-url',
      secret: { name: 'kyc-ledger-db', items: [{ key: 'uri', path: 'ledger-database-url' }] },
    });
    expect(ledger('single-replica-memory-values.yaml')).toEqual({ env: undefined, secret: undefined });
    const policy = rendered
      .get('chart-secret-redis-url-values.yaml')!
      .find((o) => o.kind === 'NetworkPolicy') as unknown as {
      spec: { egress: Array<{ to: unknown[]; ports: Array<{ port: number }> }> };
    };
    expect(policy.spec.egress).toContainEqual({
      to: [{ ipBlock: { cidr: '10.20.0.0/24' } }],
      ports: [{ port: 5433, protocol: 'TCP' }],
    });
  });

  it('mounts the webhooks from their Secret as WEBHOOKS_FILE and opens egress to the receivers only', async () => {
    const objects = rendered.get('chart-secret-redis-url-values.yaml')!;
    const pod = deployment(objects).spec.template.spec as unknown as {
      containers: Array<{ env: Array<{ name: string; value?: string }> }>;
      volumes: Array<{ name: string; projected?: { sources: Array<{ secret?: { name: string; items: unknown[] } }> } }>;
    };
    expect(pod.containers[0].env.find((e) => e.name === 'WEBHOOKS_FILE')?.value).toBe(
      '/var/run/secrets/verification-gateway/webhooks.json',
    );
    expect(pod.containers[0].env.find((e) => e.name === 'WEBHOOKS')).toBeUndefined();
    expect(pod.volumes.find((v) => v.name === 'secrets')?.projected?.sources).toContainEqual({
      secret: { name: 'vgw-webhooks', items: [{ key: 'webhooks.json', path: 'webhooks.json' }] },
    });
    const policy = objects.find((o) => o.kind === 'NetworkPolicy') as unknown as {
      spec: { egress: Array<{ to: unknown[]; ports: Array<{ port: number }> }> };
    };
    expect(policy.spec.egress).toContainEqual({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'billing' } } }],
      ports: [{ port: 8443, protocol: 'TCP' }],
    });
    const unreachable = await template([
      '-f',
      join(CHART_DIR, 'ci', 'chart-secret-redis-url-values.yaml'),
      '--set',
      'networkPolicy.egress.webhooks.to=null',
    ]);
    expect(unreachable.ok).toBe(false);
    expect(unreachable.error).toContain('networkPolicy.egress.webhooks.to');
  });

  it('gives the embedded ledger an emptyDir, or a kept PersistentVolumeClaim with strategy Recreate', async () => {
    type Pod = {
      containers: Array<{
        env: Array<{ name: string; value?: string }>;
        volumeMounts: Array<{ name: string; mountPath: string }>;
      }>;
      volumes: Array<{ name: string; emptyDir?: object; persistentVolumeClaim?: { claimName: string } }>;
    };
    const ledger = (objects: KubernetesObject[]) => {
      const spec = deployment(objects).spec as unknown as { strategy: { type: string }; template: { spec: Pod } };
      const pod = spec.template.spec;
      return {
        strategy: spec.strategy.type,
        dir: pod.containers[0].env.find((e) => e.name === 'LEDGER_DATA_DIR')?.value,
        mount: pod.containers[0].volumeMounts.find((m) => m.name === 'ledger')?.mountPath,
        volume: pod.volumes.find((v) => v.name === 'ledger'),
        claim: objects.find((o) => o.kind === 'PersistentVolumeClaim') as unknown,
      };
    };
    const dir = '/var/lib/verification-gateway/ledger';
    expect(ledger(rendered.get('single-replica-memory-values.yaml')!)).toEqual({
      strategy: 'RollingUpdate',
      dir,
      mount: dir,
      volume: { name: 'ledger', emptyDir: {} },
      claim: undefined,
    });
    const persisted = await template([
      ...VALID,
      '--set',
      'ledger.embedded.persistence.enabled=true',
      '--set',
      'ledger.embedded.persistence.size=5Gi',
      '--set',
      'ledger.embedded.persistence.storageClass=fast',
    ]);
    expect(persisted.ok).toBe(true);
    expect(ledger(persisted.objects)).toMatchObject({
      strategy: 'Recreate',
      dir,
      volume: { name: 'ledger', persistentVolumeClaim: { claimName: 'vgw-verification-gateway-ledger' } },
      claim: {
        metadata: { name: 'vgw-verification-gateway-ledger', annotations: { 'helm.sh/resource-policy': 'keep' } },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '5Gi' } } },
      },
    });
    // With a PostgreSQL URL, no embedded ledger and no volume for it.
    expect(ledger(rendered.get('cluster-password-tls-values.yaml')!)).toMatchObject({
      dir: undefined,
      volume: undefined,
    });
    // PGlite's first start peaks near 955 MiB: the embedded pod gets 1Gi, one with a URL `resources`.
    const limit = (objects: KubernetesObject[]) =>
      (deployment(objects).spec.template.spec.containers[0] as { resources?: { limits?: { memory?: string } } })
        .resources?.limits?.memory;
    expect(limit(rendered.get('single-replica-memory-values.yaml')!)).toBe('1Gi');
    expect(limit(rendered.get('cluster-password-tls-values.yaml')!)).toBe('384Mi');
  });

  it('runs the ledger drainer as a Deployment of its own that no gateway selector matches, its pods scraped and policed', async () => {
    type Labels = Record<string, string>;
    type Deployment = KubernetesObject & {
      metadata: { name: string };
      spec: {
        replicas?: number;
        selector: { matchLabels: Labels };
        template: {
          metadata: { labels: Labels };
          spec: { containers: Array<{ env: Array<{ name: string; value?: string }>; resources?: unknown }> };
        };
      };
    };
    const objects = rendered.get('chart-secret-redis-url-values.yaml')!;
    const [gateway, drainer] = objects.filter((o) => o.kind === 'Deployment') as Deployment[];
    const env = (d: Deployment) => d.spec.template.spec.containers[0].env;
    expect(drainer.metadata.name).toBe('vgw-verification-gateway-ledger-drainer');
    expect(drainer.spec.replicas).toBe(2);
    expect(drainer.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: '100m', memory: '128Mi' } });
    expect(env(gateway)).toContainEqual({ name: 'LEDGER_DRAIN', value: 'false' });
    expect(env(gateway)).toContainEqual({ name: 'WEBHOOKS_DELIVER', value: 'false' });
    expect(env(drainer).some((e) => e.name === 'LEDGER_DRAIN' || e.name === 'WEBHOOKS_DELIVER')).toBe(false);
    // Same pod otherwise: the same settings and Secrets.
    expect(env(drainer)).toEqual(env(gateway).filter((e) => !['LEDGER_DRAIN', 'WEBHOOKS_DELIVER'].includes(e.name)));
    const matches = (selector: Labels, labels: Labels) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const gatewayService = objects.find(
      (o) => o.kind === 'Service' && (o.metadata as { name: string }).name === 'vgw-verification-gateway',
    ) as unknown as { spec: { selector: Labels } };
    expect(matches(gateway.spec.selector.matchLabels, drainer.spec.template.metadata.labels)).toBe(false);
    expect(matches(gatewayService.spec.selector, drainer.spec.template.metadata.labels)).toBe(false);
    expect(matches(drainer.spec.selector.matchLabels, gateway.spec.template.metadata.labels)).toBe(false);
    expect(drainer.spec.template.metadata.labels['app.kubernetes.io/component']).toBe('ledger-drainer');
    // Its metrics through a headless Service the ServiceMonitor selects; the NetworkPolicy covers its pods.
    const drainerService = objects.find(
      (o) => o.kind === 'Service' && (o.metadata as { name: string }).name === drainer.metadata.name,
    ) as unknown as { metadata: { labels: Labels }; spec: { clusterIP: string; selector: Labels } };
    expect(drainerService.spec.clusterIP).toBe('None');
    expect(matches(drainerService.spec.selector, drainer.spec.template.metadata.labels)).toBe(true);
    type Expressions = { matchExpressions: Array<{ key: string; operator: string; values: string[] }> };
    const inSelector = (selector: Expressions, labels: Labels) =>
      selector.matchExpressions.every((e) => e.operator === 'In' && e.values.includes(labels[e.key]));
    const monitor = objects.find((o) => o.kind === 'ServiceMonitor') as unknown as { spec: { selector: Expressions } };
    const policy = objects.find((o) => o.kind === 'NetworkPolicy') as unknown as { spec: { podSelector: Expressions } };
    for (const labels of [
      drainerService.metadata.labels,
      (gatewayService as never as { metadata: { labels: Labels } }).metadata.labels,
    ]) {
      expect(inSelector(monitor.spec.selector, labels)).toBe(true);
    }
    for (const d of [gateway, drainer])
      expect(inSelector(policy.spec.podSelector, d.spec.template.metadata.labels)).toBe(true);
    // Without a drainer nothing of it is rendered, and every gateway pod drains.
    const alone = rendered.get('cluster-password-tls-values.yaml')!;
    expect(alone.filter((o) => o.kind === 'Deployment')).toHaveLength(1);
    expect(env(alone.find((o) => o.kind === 'Deployment') as Deployment).some((e) => e.name === 'LEDGER_DRAIN')).toBe(
      false,
    );
    // A long chart name: every label value and selector value within Kubernetes' 63 characters.
    const long = await template([
      ...VALID,
      ...['--set', `nameOverride=${'n'.repeat(55)}`, '--set', 'redis.url=redis://r:6379'],
      ...[
        '--set',
        'ledger.existingSecret=db',
        '--set',
        'ledger.drainer.replicas=1',
        '--set',
        'networkPolicy.enabled=true',
      ],
      ...['--set', 'networkPolicy.egress.enabled=false', '--set', 'serviceMonitor.enabled=true'],
    ]);
    expect(long.error).toBe('');
    const labelValues =
      JSON.stringify(long.objects).match(/"app\.kubernetes\.io\/name":"[^"]*"|"values":\["[^\]]*\]/g) ?? [];
    expect(labelValues.length).toBeGreaterThan(5);
    const tooLong = labelValues.flatMap((m) => [...m.matchAll(/"([^"]{64,})"/g)].map((v) => v[1]));
    expect(tooLong).toEqual([]);
    // A drainer needs a shared database and a shared queue.
    const embedded = await template([
      ...VALID,
      '--set',
      'ledger.drainer.replicas=1',
      '--set',
      'redis.url=redis://r:6379',
    ]);
    expect(embedded.ok).toBe(false);
    expect(embedded.error).toContain('ledger.drainer.replicas needs ledger.existingSecret');
    const noRedis = await template([
      ...VALID,
      '--set',
      'ledger.drainer.replicas=1',
      '--set',
      'ledger.existingSecret=db',
    ]);
    expect(noRedis.ok).toBe(false);
    expect(noRedis.error).toContain('ledger.drainer.replicas needs Redis');
  });

  it('uses the native preStop sleep from Kubernetes 1.30 and node by its absolute path before', async () => {
    const current = await template([...VALID, '--kube-version', '1.30.0']);
    expect(current.ok).toBe(true);
    const [gateway] = deployment(current.objects).spec.template.spec.containers;
    expect(gateway.lifecycle?.preStop).toEqual({ sleep: { seconds: 10 } });

    const older = await template([...VALID, '--kube-version', '1.29.4']);
    expect(older.ok).toBe(true);
    const [olderGateway] = deployment(older.objects).spec.template.spec.containers;
    expect(olderGateway.lifecycle?.preStop).toEqual({
      exec: { command: ['/usr/local/bin/node', '-e', 'setTimeout(() => {}, 10000)'] },
    });
    for (const object of older.objects) expect(await schema.problems(object)).toEqual([]);
  });

  it.each([
    ['several replicas without Redis', ['--set', 'replicaCount=3'], 'no Redis is configured but up to 3 replicas'],
    [
      'an autoscaler without Redis',
      ['--set', 'autoscaling.enabled=true'],
      'no Redis is configured but up to 6 replicas',
    ],
    [
      'several replicas with Redis but no ledger database',
      ['--set', 'replicaCount=3', '--set', 'redis.url=redis://redis:6379'],
      'no ledger database is configured but up to 3 replicas may run',
    ],
    [
      'an autoscaler with Redis but no ledger database, naming the PostgreSQL egress when egress is restricted',
      [
        '--set',
        'autoscaling.enabled=true',
        '--set',
        'redis.url=redis://redis:6379',
        '--set',
        'networkPolicy.enabled=true',
        '--set',
        'networkPolicy.egress.enabled=true',
      ],
      'Set ledger.existingSecret (a Secret with the PostgreSQL URL under ledger.existingSecretKey, mounted as LEDGER_DATABASE_URL_FILE) and networkPolicy.egress.postgres.to',
    ],
    [
      'a grace period shorter than preStop + the drain (45 s: it once passed)',
      ['--set', 'terminationGracePeriodSeconds=45'],
      "terminationGracePeriodSeconds (45) must be larger than lifecycle.preStop.sleepSeconds (10) + the shutdown drain's bound, 2 x upstream.advancedTimeoutMs + 4 x upstream.timeoutMs + 34 s (134s)",
    ],
    ['no callers', ['--set', 'apiKeys.existingSecret='], 'no callers are configured'],
    [
      'a Redis URL with a password in the ConfigMap',
      ['--set', 'redis.url=redis://:hunter2@redis:6379'],
      'redis.url contains a password and would be stored in a ConfigMap',
    ],
    [
      'the native sleep action on Kubernetes 1.29',
      ['--set', 'lifecycle.preStop.mode=sleep', '--kube-version', '1.29.0'],
      'lifecycle.preStop.mode=sleep needs Kubernetes >= 1.30',
    ],
    [
      'an HTTPRoute without a Gateway',
      ['--set', 'httpRoute.enabled=true'],
      'httpRoute.parentRefs must name the Gateway(s)',
    ],
    [
      'Redis credentials without a Redis',
      ['--set', 'redis.auth.existingSecret=redis'],
      'redis.auth set but no Redis is configured',
    ],
    [
      'a client certificate without its key',
      [
        '--set',
        'redis.url=rediss://r:6379',
        '--set',
        'redis.tls.existingSecret=t',
        '--set',
        'redis.tls.certKey=tls.crt',
      ],
      'redis.tls.certKey and redis.tls.keyKey go together',
    ],
    [
      'a Sentinel password without Sentinels',
      [
        '--set',
        'redis.url=redis://r:6379',
        '--set',
        'redis.auth.existingSecret=r',
        '--set',
        'redis.auth.sentinelPasswordKey=s',
      ],
      'redis.auth.sentinelPasswordKey is only used with redis.sentinels',
    ],
    // Operations added by configuration (docs/api.md, "Operations the operator adds"): shapes by the schema, the rest at render.
    [
      "an added operation without a price beside the built-ins'",
      [
        ...OPERATION,
        '--set-json',
        'budgets.prices={"shahkar":{"standard":1,"advanced":3},"iban":{"standard":1,"advanced":3}}',
      ],
      'budgets.prices.card-to-iban is required',
    ],
    [
      'an added operation named as a built-in',
      [...OPERATION, ...PRICED, '--set', 'operations[0].name=iban'],
      'operations[0].name: "iban" is already an operation',
    ],
    [
      'an upstream path with //',
      [...OPERATION, ...PRICED, '--set', 'operations[0].upstreamPath=/api/v5//KYC'],
      'operations.0.upstreamPath: Does not match pattern',
    ],
    [
      'a field the gateway sets itself',
      [...OPERATION, ...PRICED, '--set', 'operations[0].fields.trackId.type=text'],
      'operations[0].fields.trackId: trackId is a field the gateway sets itself',
    ],
    [
      'a digits field without its lengths',
      [...OPERATION, ...PRICED, '--set', 'operations[0].fields.reference.type=digits'],
      'operations[0].fields.reference: a digits field takes maxLength and minLength',
    ],
    [
      'a field of an unknown type',
      [...OPERATION, ...PRICED, '--set', 'operations[0].fields.cardNumber.type=card'],
      'operations.0.fields.cardNumber.type must be one of the following',
    ],
    ['a Kubernetes older than kubeVersion', ['--kube-version', '1.24.0'], 'chart requires kubeVersion: >=1.25.0-0'],
    // values.schema.json: unknown keys fail at every level, with the key named.
    ['a misspelt top-level key', ['--set', 'replicaCont=3'], '(root): Additional property replicaCont is not allowed'],
    [
      'a misspelt nested key',
      ['--set', 'probes.readiness.periodSecond=5'],
      'probes.readiness: Additional property periodSecond is not allowed',
    ],
    ['a wrong type', ['--set', 'config.port=http'], 'config.port: Invalid type. Expected: integer, given: string'],
    [
      'a misspelt alert threshold',
      ['--set', 'prometheusRule.thresholds.p99Second=2'],
      'prometheusRule.thresholds: Additional property p99Second is not allowed',
    ],
    [
      'an error ratio above 1',
      ['--set', 'prometheusRule.thresholds.errorRatio=5'],
      'prometheusRule.thresholds.errorRatio: Must be less than or equal to 1',
    ],
  ])('refuses %s', async (_name, args, message) => {
    const result = await template([...VALID, ...args]);
    expect(result.ok).toBe(false);
    expect(result.error).toContain(message);
  });

  it('has a values schema that rejects unknown keys in every object it declares', () => {
    const root = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Record<string, unknown>;
    const open: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const schemaNode = node as Record<string, unknown>;
      if (schemaNode.properties && schemaNode.additionalProperties !== false) open.push(path || '/');
      for (const [key, child] of Object.entries(schemaNode)) walk(child, `${path}/${key}`);
    };
    walk(root, '');
    expect(open).toEqual([]);
  });

  it('reports unknown fields in a rendered object (the schema check itself can fail)', async () => {
    const original = deployment(rendered.get(CI_FILES[0])!) as unknown as KubernetesObject & {
      spec: Record<string, unknown>;
    };
    const typo = { ...original, spec: { ...original.spec, replicaCont: 3 } };
    expect(await schema.problems(typo)).toEqual(['.spec.replicaCont: unknown field']);
    const wrongType = { ...original, spec: { ...original.spec, replicas: 'three' } };
    expect((await schema.problems(wrongType)).join('\n')).toContain('replicas');
  });
});
