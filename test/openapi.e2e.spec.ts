/**
 * The OpenAPI document (docs/api.md §4): the served one is the committed docs/openapi.json,
 * and it passes Redocly's recommended rules with no error and no warning.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { servedDocument } from './support/served-document.js';

const COMMITTED = new URL('../docs/openapi.json', import.meta.url);
const REDOCLY = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
}

describe('OpenAPI document', () => {
  const fixture = servedDocument<OpenApiDocument>();

  it('is the committed docs/openapi.json (run `npm run openapi` after changing the API)', () => {
    const committed = JSON.parse(readFileSync(COMMITTED, 'utf8')) as OpenApiDocument;
    expect(fixture.served).toEqual(committed);
  });

  it('passes `redocly lint` (recommended rules) with no error and no warning', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [REDOCLY, 'lint', 'docs/openapi.json', '--format=json'],
      {
        cwd: new URL('..', import.meta.url).pathname,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
    const report = JSON.parse(stdout) as { totals: Record<string, number>; problems: unknown[] };
    expect(report.problems).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  });

  it('describes every route, with probes, metrics and docs open and the rest behind a credential', () => {
    expect(fixture.served.openapi).toBe('3.1.0');
    const open = ['/health/live', '/health/ready', '/health/startup', '/metrics', '/docs', '/docs-json'];
    const guarded = ['/v1/kyc/shahkar', '/v1/kyc/iban', '/v1/inquiries/{trackId}', '/v1/budget', '/admin/budgets'];
    // Administration (docs/api.md §6): API keys and operators' console tokens, never an app's JWT.
    const admin = [
      '/admin/status',
      '/admin/me',
      '/admin/operator-actions',
      '/admin/ledger',
      '/admin/usage',
      '/admin/reconciliations',
      '/admin/ledger/parked',
      '/admin/ledger/parked/{id}/redrive',
      '/admin/ledger/parked/{id}/discard',
      '/admin/inquiries',
      '/admin/trends',
      '/admin/forecast',
      '/admin/webhooks/deliveries',
      '/admin/webhooks/deliveries/{id}/retry',
    ];
    expect(Object.keys(fixture.served.paths).sort()).toEqual([...open, ...guarded, ...admin].sort());
    expect(Object.keys(fixture.served.paths['/admin/status'].get.responses)).toEqual(
      expect.arrayContaining(['200', '401', '403', '500']),
    );
    for (const path of admin) {
      for (const operation of Object.values(fixture.served.paths[path])) {
        expect(operation.security).toEqual([{ apiKey: [] }]);
      }
    }
    for (const path of open) expect(fixture.served.paths[path].get.security).toEqual([]);
    for (const path of guarded) {
      for (const operation of Object.values(fixture.served.paths[path])) {
        // The administration routes take API keys or operators' tokens (ledger:read is never granted to an app's JWT).
        expect(operation.security).toHaveLength(path.startsWith('/admin/') ? 1 : 2);
        expect(Object.keys(operation.responses)).toEqual(
          expect.arrayContaining(['200', '401', '403', '408', '431', '500', '503']),
        );
      }
    }
  });
});
