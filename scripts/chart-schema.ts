/**
 * Vendors Kubernetes' own schemas into the chart's values.schema.json, so that `helm lint`,
 * `helm template` and `helm install` reject a typo at any depth of a Kubernetes-typed value
 * (`resources.limit.cpu`, `securityContext.readOnlyRootFileSystem`, `extraEnv[0].nam`) with
 * no network at lint time.
 *
 * Source: the TypeScript models that kubernetes-models, @kubernetes-models/gateway-api and
 * @kubernetes-models/prometheus-operator generate from the Kubernetes OpenAPI document (and
 * the Gateway API and Prometheus Operator CRD schemas): field names, required fields, enums
 * and element types. Each object becomes a JSON Schema (draft-07, the dialect Helm 3
 * validates) with `additionalProperties: false`, as kubeconform's "strict" schemas and
 * `kubectl --validate=strict` treat unknown fields. Map-typed fields (labels, resource
 * quantities) keep their value type. Kubernetes versions: the models follow the newest
 * Kubernetes release; fields only newer than the cluster are still rejected by its API server.
 *
 * The hand-written part of values.schema.json points at `#/definitions/io.k8s.…` names from
 * ROOTS below; this script rewrites every generated definition (the hand-written ones stay).
 *   npm run chart:schema            rewrite helm/verification-gateway/values.schema.json
 *   npm run chart:schema -- --check exit 1 when the vendored definitions are stale
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
// Compiled to .build/scripts or run from scripts/ by Jest: the repository root is above either.
export const ROOT = resolve(here, here.includes(`${sep}.build${sep}`) ? '../..' : '..');
export const SCHEMA_FILE = join(ROOT, 'helm', 'verification-gateway', 'values.schema.json');
const GENERATED_PREFIXES = ['io.k8s.', 'com.coreos.monitoring.'];

type JsonSchema = Record<string, unknown>;

/** The Kubernetes types the chart's values hold, by definition name. */
export const ROOTS: Record<string, { from: string; type: string }> = {
  'io.k8s.api.core.v1.ResourceRequirements': {
    from: 'kubernetes-models/v1/ResourceRequirements',
    type: 'IResourceRequirements',
  },
  'io.k8s.api.core.v1.PodSecurityContext': {
    from: 'kubernetes-models/v1/PodSecurityContext',
    type: 'IPodSecurityContext',
  },
  'io.k8s.api.core.v1.SecurityContext': { from: 'kubernetes-models/v1/SecurityContext', type: 'ISecurityContext' },
  'io.k8s.api.core.v1.EnvVar': { from: 'kubernetes-models/v1/EnvVar', type: 'IEnvVar' },
  'io.k8s.api.core.v1.EnvFromSource': { from: 'kubernetes-models/v1/EnvFromSource', type: 'IEnvFromSource' },
  'io.k8s.api.core.v1.Volume': { from: 'kubernetes-models/v1/Volume', type: 'IVolume' },
  'io.k8s.api.core.v1.VolumeMount': { from: 'kubernetes-models/v1/VolumeMount', type: 'IVolumeMount' },
  'io.k8s.api.core.v1.Container': { from: 'kubernetes-models/v1/Container', type: 'IContainer' },
  'io.k8s.api.core.v1.LocalObjectReference': {
    from: 'kubernetes-models/v1/LocalObjectReference',
    type: 'ILocalObjectReference',
  },
  'io.k8s.api.core.v1.Affinity': { from: 'kubernetes-models/v1/Affinity', type: 'IAffinity' },
  'io.k8s.api.core.v1.Toleration': { from: 'kubernetes-models/v1/Toleration', type: 'IToleration' },
  'io.k8s.api.core.v1.TopologySpreadConstraint': {
    from: 'kubernetes-models/v1/TopologySpreadConstraint',
    type: 'ITopologySpreadConstraint',
  },
  'io.k8s.api.apps.v1.DeploymentStrategy': {
    from: 'kubernetes-models/apps/v1/DeploymentStrategy',
    type: 'IDeploymentStrategy',
  },
  'io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerBehavior': {
    from: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscalerBehavior',
    type: 'IHorizontalPodAutoscalerBehavior',
  },
  'io.k8s.api.networking.v1.NetworkPolicyPeer': {
    from: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer',
    type: 'INetworkPolicyPeer',
  },
  'io.k8s.api.networking.v1.NetworkPolicyEgressRule': {
    from: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyEgressRule',
    type: 'INetworkPolicyEgressRule',
  },
  'io.k8s.api.networking.v1.IngressTLS': {
    from: 'kubernetes-models/networking.k8s.io/v1/IngressTLS',
    type: 'IIngressTLS',
  },
  'io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector': {
    from: '@kubernetes-models/apimachinery/apis/meta/v1/LabelSelector',
    type: 'ILabelSelector',
  },
  'io.k8s.networking.gateway.v1.ParentReference': {
    from: '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/ParentReference',
    type: 'IParentReference',
  },
  'com.coreos.monitoring.v1.RelabelConfig': {
    from: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/RelabelConfig',
    type: 'IRelabelConfig',
  },
};

/** A definition name for a named model type, from the file that declares it. */
function nameOf(file: string, symbol: string): string {
  const path = relative(join(ROOT, 'node_modules'), file).replace(/\.d\.ts$/, '');
  const base = symbol.replace(/^I/, '').replace(/^IoK8s.*V\d\w*?(?=[A-Z][a-z])/, '');
  const leaf = path.split('/').pop() ?? base;
  const [pkg, ...rest] = path.split('/');
  const dir = rest.slice(0, -1);
  if (pkg === 'kubernetes-models') {
    if (dir.length === 1) return `io.k8s.api.core.${dir[0]}.${leaf}`;
    return `io.k8s.api.${dir[0].split('.')[0]}.${dir[1]}.${leaf}`;
  }
  if (path.startsWith('@kubernetes-models/apimachinery/')) {
    return `io.k8s.apimachinery.pkg.${path.split('/').slice(2).join('.')}`;
  }
  if (path.startsWith('@kubernetes-models/gateway-api/')) return `io.k8s.networking.gateway.${dir.at(-1)}.${leaf}`;
  if (path.startsWith('@kubernetes-models/prometheus-operator/')) return `com.coreos.monitoring.${dir.at(-1)}.${leaf}`;
  throw new Error(`no definition name for ${symbol} in ${path}`);
}

/**
 * A TypeScript program over one generated module of model type imports (`lines`), written to
 * `file`; throws `<what>: <diagnostics>` when an import does not resolve. Shared with the chart
 * tests' Kubernetes schema (test/support/kubernetes-schema.ts).
 */
export function modelProgram(file: string, lines: string[], what: string): ts.Program {
  writeFileSync(file, lines.join(''));
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  });
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName === file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (problems.length > 0) throw new Error(`${what}: ${problems.join('; ')}`);
  return program;
}

/** Generates the definitions for ROOTS and everything they reference. */
export function generateDefinitions(): Record<string, JsonSchema> {
  const dir = join(ROOT, 'node_modules', '.cache', 'chart-schema');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'roots.mts');
  const entries = Object.entries(ROOTS);
  const program = modelProgram(
    file,
    entries.map(([, r], i) => `import type { ${r.type} as M${i} } from '${r.from}';\nexport type R${i} = M${i};\n`),
    'no model for some roots',
  );
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const definitions: Record<string, JsonSchema> = {};
  const pending: Array<[string, ts.Type]> = [];
  const named = new Map<ts.Type, string>();

  const refName = (type: ts.Type): string | undefined => {
    const known = named.get(type);
    if (known) return known;
    const symbol = type.getSymbol();
    const declaration = symbol?.getDeclarations()?.[0];
    if (!symbol || !declaration || !ts.isInterfaceDeclaration(declaration)) return undefined;
    const name = nameOf(declaration.getSourceFile().fileName, symbol.getName());
    named.set(type, name);
    pending.push([name, type]);
    return name;
  };

  const schemaOf = (declared: ts.Type): JsonSchema => {
    const type = checker.getNonNullableType(declared);
    if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return {};
    if (type.isUnion()) {
      const members = type.types;
      if (members.every((t) => t.flags & ts.TypeFlags.BooleanLiteral)) return { type: 'boolean' };
      if (members.every((t) => t.isStringLiteral())) {
        return { type: 'string', enum: members.map((t) => t.value).sort() };
      }
      const kinds = new Set<string>();
      const others: JsonSchema[] = [];
      for (const t of members) {
        if (t.flags & (ts.TypeFlags.String | ts.TypeFlags.StringLiteral)) kinds.add('string');
        else if (t.flags & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) kinds.add('number');
        else if (t.flags & ts.TypeFlags.BooleanLiteral) kinds.add('boolean');
        else others.push(schemaOf(t));
      }
      const primitive = kinds.size > 0 ? [{ type: kinds.size === 1 ? [...kinds][0] : [...kinds].sort() }] : [];
      const all = [...primitive, ...others];
      return all.length === 1 ? all[0] : { anyOf: all };
    }
    if (type.flags & ts.TypeFlags.StringLiteral)
      return { type: 'string', enum: [(type as ts.StringLiteralType).value] };
    if (type.flags & ts.TypeFlags.String) return { type: 'string' };
    if (type.flags & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) return { type: 'number' };
    if (type.flags & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral)) return { type: 'boolean' };
    if (checker.isArrayType(type)) {
      const [element] = checker.getTypeArguments(type as ts.TypeReference);
      return { type: 'array', items: schemaOf(element) };
    }
    if (type.flags & ts.TypeFlags.Object) {
      const name = refName(type);
      if (name) return { $ref: `#/definitions/${name}` };
      return objectSchema(type);
    }
    throw new Error(`no JSON Schema for TypeScript type ${checker.typeToString(type)}`);
  };

  const objectSchema = (type: ts.Type): JsonSchema => {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const property of checker.getPropertiesOfType(type)) {
      properties[property.getName()] = schemaOf(checker.getTypeOfSymbol(property));
      if (!(property.getFlags() & ts.SymbolFlags.Optional)) required.push(property.getName());
    }
    const index = checker.getIndexInfosOfType(type).find((info) => info.keyType.flags & ts.TypeFlags.String);
    return {
      type: 'object',
      ...(Object.keys(properties).length > 0 ? { properties } : {}),
      ...(required.length > 0 ? { required: required.sort() } : {}),
      additionalProperties: index ? schemaOf(index.type) : false,
    };
  };

  for (const statement of source.statements) {
    if (!ts.isTypeAliasDeclaration(statement)) continue;
    const i = Number(statement.name.text.slice(1));
    const type = checker.getTypeAtLocation(statement.name);
    named.set(type, entries[i][0]);
    pending.push([entries[i][0], type]);
  }
  while (pending.length > 0) {
    const [name, type] = pending.shift()!;
    if (definitions[name]) continue;
    definitions[name] = objectSchema(type);
  }
  return Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b)));
}

/** values.schema.json with its generated definitions replaced by freshly generated ones. */
export function vendoredSchema(current: string): string {
  const schema = JSON.parse(current) as { definitions: Record<string, JsonSchema> };
  const handWritten = Object.entries(schema.definitions).filter(
    ([name]) => !GENERATED_PREFIXES.some((p) => name.startsWith(p)),
  );
  schema.definitions = { ...Object.fromEntries(handWritten), ...generateDefinitions() };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const current = readFileSync(SCHEMA_FILE, 'utf8');
  const next = vendoredSchema(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      process.stderr.write(`${SCHEMA_FILE} is stale: run npm run chart:schema\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(SCHEMA_FILE, next);
    process.stdout.write(
      `${SCHEMA_FILE}: ${Object.keys((JSON.parse(next) as { definitions: object }).definitions).length} definitions\n`,
    );
  }
}
