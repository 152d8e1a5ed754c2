/**
 * Secrets rotated without a restart: the files named by API_KEYS_FILE and
 * UPSTREAM_USERNAME_FILE / UPSTREAM_PASSWORD_FILE are rewritten under a running gateway,
 * as Kubernetes does with a mounted Secret. Each step waits for the gateway's own
 * "reloaded"/"rejected" log line (an event, not a sleep), then checks the effect.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { CapturedLog } from './support/captured-log.js';
import { nextEvent } from './support/events.js';
import { SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import {
  TEST_CLIENTS,
  callGateway,
  sha256,
  startGateway,
  type RunningGateway,
  untilStarted,
} from './support/gateway.js';

const entry = (client: { clientId: string; key: string; scopes: readonly string[] }) => ({
  clientId: client.clientId,
  keySha256: sha256(client.key),
  scopes: client.scopes,
});

describe('secret files rotated under a running gateway', () => {
  let sim: UpstreamSimulator;
  let dir: string;
  let gateway: RunningGateway;
  const log = new CapturedLog();
  const files = { apiKeys: '', username: '', password: '' };

  /** Replaces a file atomically (write aside, rename), as the kubelet swaps a Secret volume. */
  function rewrite(path: string, content: string): void {
    const aside = `${path}.new`;
    writeFileSync(aside, content);
    renameSync(aside, path);
  }

  const logged = (text: string) => nextEvent<string>(log, 'line', (line) => line.includes(text), 10_000);
  const shahkar = (key: string) =>
    callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: key, json: SHAHKAR }).then((r) => r.status);

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    dir = mkdtempSync(join(tmpdir(), 'vgw-rotation-'));
    files.apiKeys = join(dir, 'api-keys.json');
    files.username = join(dir, 'upstream-username');
    files.password = join(dir, 'upstream-password');
    writeFileSync(files.apiKeys, JSON.stringify([entry(TEST_CLIENTS.full)]));
    writeFileSync(files.username, `${UPSTREAM_USERNAME}\n`);
    writeFileSync(files.password, `${UPSTREAM_PASSWORD}\n`);
    gateway = await startGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        UPSTREAM_USERNAME: undefined,
        UPSTREAM_PASSWORD: undefined,
        API_KEYS: undefined,
        UPSTREAM_USERNAME_FILE: files.username,
        UPSTREAM_PASSWORD_FILE: files.password,
        API_KEYS_FILE: files.apiKeys,
        SECRET_FILES_POLL_MS: '100',
      },
      { logger: log },
    );
    await untilStarted(gateway.app);
  });
  afterAll(async () => {
    await gateway?.close();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a key added to API_KEYS_FILE works and a removed one stops working', async () => {
    expect(await shahkar(TEST_CLIENTS.full.key)).toBe(200);
    expect(await shahkar(TEST_CLIENTS.other.key)).toBe(401);

    const reloaded = logged('API_KEYS_FILE: reloaded');
    rewrite(files.apiKeys, JSON.stringify([entry(TEST_CLIENTS.other)]));
    await reloaded;

    expect(await shahkar(TEST_CLIENTS.other.key)).toBe(200);
    expect(await shahkar(TEST_CLIENTS.full.key)).toBe(401);
  });

  it('an invalid API_KEYS_FILE keeps the previous keys, logs an error and sets a metric until fixed', async () => {
    const rejected = logged('API_KEYS_FILE: the changed file was rejected');
    rewrite(files.apiKeys, '[{"clientId": "half-written"');
    expect(await rejected).toMatch(/^error: .*is not valid JSON.*keeping the previous value/);
    expect(await shahkar(TEST_CLIENTS.other.key)).toBe(200);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toContain('vgw_secret_file_rejected{variable="API_KEYS_FILE"} 1');
    expect(metrics).toContain('vgw_secret_file_reloads_total{variable="API_KEYS_FILE",outcome="rejected"} 1');

    // A valid document that would lock every caller out is refused too.
    const emptied = logged('no key left and no JWT configured');
    rewrite(files.apiKeys, '[]');
    await emptied;
    expect(await shahkar(TEST_CLIENTS.other.key)).toBe(200);

    const fixed = logged('API_KEYS_FILE: reloaded');
    rewrite(files.apiKeys, JSON.stringify([entry(TEST_CLIENTS.other), entry(TEST_CLIENTS.basic)]));
    await fixed;
    expect(await shahkar(TEST_CLIENTS.basic.key)).toBe(200);
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).toContain(
      'vgw_secret_file_rejected{variable="API_KEYS_FILE"} 0',
    );
  });

  it('a rotated upstream password is used at the next credentials login, and never logged', async () => {
    const rotated = 'rotated-Pa55-9c1e';
    const reloaded = logged('UPSTREAM_PASSWORD_FILE: reloaded');
    rewrite(files.password, `${rotated}\n`);
    await reloaded;

    // The upstream changes the password (refresh tokens die with it, §4.1 rule 4) and the
    // current access token expires: only a credentials login with the new password works.
    sim.setPassword(rotated);
    sim.expireAllAccessTokens();
    const before = sim.tokenCalls.credentials;
    expect(await shahkar(TEST_CLIENTS.other.key)).toBe(200);
    expect(sim.tokenCalls.credentials).toBeGreaterThan(before);
    expect(log.lines.join('\n')).not.toContain(rotated);
  });
});
