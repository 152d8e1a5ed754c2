/**
 * What the chart vendors from elsewhere is current: the Kubernetes schemas in
 * values.schema.json (scripts/chart-schema.ts, from the kubernetes-models packages) and the
 * runbooks in files/runbooks.yaml (scripts/chart-runbooks.ts, from docs/runbooks.md).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { RUNBOOKS_MD, RUNBOOKS_YAML, runbooksYaml } from '../scripts/chart-runbooks.js';
import { SCHEMA_FILE, vendoredSchema } from '../scripts/chart-schema.js';

describe('vendored into the chart', () => {
  it('has the Kubernetes definitions the models generate (else: npm run chart:schema)', () => {
    const current = readFileSync(SCHEMA_FILE, 'utf8');
    expect(vendoredSchema(current)).toBe(current);
    const { definitions } = JSON.parse(current) as { definitions: Record<string, { additionalProperties?: unknown }> };
    // Strict like kubectl --validate=strict: an object without free keys accepts no unknown field.
    expect(definitions['io.k8s.api.core.v1.SecurityContext'].additionalProperties).toBe(false);
    expect(definitions['io.k8s.api.core.v1.EnvVar']).toMatchObject({ required: ['name'], additionalProperties: false });
  }, 60_000);

  it('has every alert runbook of docs/runbooks.md (else: npm run chart:runbooks)', () => {
    expect(readFileSync(RUNBOOKS_YAML, 'utf8')).toBe(runbooksYaml(readFileSync(RUNBOOKS_MD, 'utf8')));
  });
});
