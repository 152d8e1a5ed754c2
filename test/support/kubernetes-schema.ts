import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { modelProgram } from '../../scripts/chart-schema.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A rendered Kubernetes object, as parsed from `helm template`. */
export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string };
  [field: string]: unknown;
}

/**
 * The models package that holds an API group's types. kubernetes-models covers the core
 * groups; Gateway API and Prometheus Operator objects come from their own packages.
 */
function modelModule({ apiVersion, kind }: KubernetesObject): string {
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  if (group === 'gateway.networking.k8s.io') return `@kubernetes-models/gateway-api/${apiVersion}/${kind}`;
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

/**
 * Validates rendered objects against the Kubernetes API schemas the way `kubectl
 * --validate=strict` does, without a cluster:
 *
 * - types, required fields, enums and formats through the validators kubernetes-models
 *   generates from the Kubernetes OpenAPI document (`Model#validate`);
 * - unknown fields: those validators accept any extra property (the API server prunes or
 *   rejects them later), so every field of the object is also looked up in the model's
 *   TypeScript type, generated from the same OpenAPI document. A field the type does not
 *   declare (`replicaCont`, `periodSecond`) is reported with its path.
 */
export class KubernetesSchema {
  private readonly checker: ts.TypeChecker;
  private readonly types = new Map<string, ts.Type>();

  private constructor(
    private readonly kinds: KubernetesObject[],
    program: ts.Program,
    file: string,
  ) {
    this.checker = program.getTypeChecker();
    const source = program.getSourceFile(file);
    if (!source) throw new Error('model type file was not loaded');
    for (const statement of source.statements) {
      if (!ts.isTypeAliasDeclaration(statement)) continue;
      this.types.set(statement.name.text, this.checker.getTypeAtLocation(statement.name));
    }
  }

  /** Loads the model types of the given kinds (one TypeScript program, a few seconds). */
  static load(kinds: KubernetesObject[]): KubernetesSchema {
    const dir = join(ROOT, 'node_modules', '.cache', 'kubernetes-schema');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'models.mts');
    const unique = [...new Map(kinds.map((k) => [`${k.apiVersion}/${k.kind}`, k])).values()];
    const program = modelProgram(
      file,
      unique.map(
        (k, i) => `import type { I${k.kind} as M${i} } from '${modelModule(k)}';\nexport type T${i} = M${i};\n`,
      ),
      'no model for some kinds',
    );
    return new KubernetesSchema(unique, program, file);
  }

  /** Every problem of one object, as `<path>: <message>`; empty when it is valid. */
  async problems(object: KubernetesObject): Promise<string[]> {
    const index = this.kinds.findIndex((k) => k.apiVersion === object.apiVersion && k.kind === object.kind);
    const type = this.types.get(`T${index}`);
    if (index < 0 || !type) return [`${object.apiVersion}/${object.kind}: no schema loaded for this kind`];
    const problems: string[] = [];
    const module = (await import(modelModule(object))) as Record<string, new (data: unknown) => { validate(): void }>;
    try {
      new module[object.kind](object).validate();
    } catch (error) {
      problems.push(...String((error as Error).message).split('\n'));
    }
    this.unknownFields(object, type, '', problems);
    return problems;
  }

  private unknownFields(value: unknown, declared: ts.Type, path: string, problems: string[]): void {
    if (value === null || value === undefined || typeof value !== 'object') return;
    let type = this.checker.getNonNullableType(declared);
    if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return;
    if (type.isUnion()) {
      // IntOrString and the like: only an object member can declare fields.
      const objects = type.types.filter((t) => t.flags & ts.TypeFlags.Object);
      if (objects.length !== 1) return;
      type = objects[0];
    }
    if (Array.isArray(value)) {
      if (!this.checker.isArrayType(type)) return;
      const [element] = this.checker.getTypeArguments(type as ts.TypeReference);
      value.forEach((item, i) => this.unknownFields(item, element, `${path}[${i}]`, problems));
      return;
    }
    const index = this.checker.getIndexInfosOfType(type).find((info) => info.keyType.flags & ts.TypeFlags.String);
    for (const [key, child] of Object.entries(value)) {
      const property = this.checker.getPropertyOfType(type, key);
      if (property) this.unknownFields(child, this.checker.getTypeOfSymbol(property), `${path}.${key}`, problems);
      else if (index) this.unknownFields(child, index.type, `${path}.${key}`, problems);
      else problems.push(`${path}.${key}: unknown field`);
    }
  }
}
