/**
 * The single-node default keeps its word (issue 43): without REDIS_URL, a built gateway keeps its
 * records and Idempotency-Keys in the embedded ledger's PGlite on disk (LEDGER_DATA_DIR), so a
 * keyed retry after a SIGKILL and a start on the same directory is a replay of the first answer,
 * with its trackId, and the upstream is asked (and charges) once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SHAHKAR } from './support/fixtures.js';
import { callGateway, TEST_CLIENTS } from './support/gateway.js';
import { buildGateway, GatewayProcesses, untilEmbeddedLedgerOpen } from './support/gateway-process.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

let scratch: string;
let sim: UpstreamSimulator;
const gateways = new GatewayProcesses();

beforeAll(async () => {
  buildGateway(); // compiled once here, not inside the test's time
  scratch = mkdtempSync(join(tmpdir(), 'vgw-single-node-'));
  sim = new UpstreamSimulator();
  await sim.start(0);
}, 180_000);

afterAll(async () => {
  await gateways.killAll();
  await sim?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function start() {
  const gateway = await gateways.start({
    UPSTREAM_BASE_URL: sim.baseUrl,
    LEDGER_DATABASE_URL: '', // the embedded ledger and the records beside it, no server
    LEDGER_DATA_DIR: join(scratch, 'data'),
  });
  await untilEmbeddedLedgerOpen(gateway);
  return gateway;
}

const keyed = (url: string, key: string, json: unknown = SHAHKAR) =>
  callGateway(url, 'POST', '/v1/kyc/shahkar', {
    apiKey: TEST_CLIENTS.full.key,
    json,
    headers: { 'idempotency-key': key },
  });

describe('the single-node default (no Redis)', () => {
  it('replays a keyed retry after SIGKILL and a restart on the same directory; the upstream charged once', async () => {
    const first = await start();
    const answered = await keyed(first.url, 'restart-1');
    expect(answered.status).toBe(200);
    const trackId = answered.headers.get('x-track-id')!;
    expect(first.output()).toContain('records'); // the log names where the records are kept
    first.process.kill('SIGKILL');
    await first.exited;

    const second = await start();
    const retried = await keyed(second.url, 'restart-1');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('x-track-id')).toBe(trackId);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(answered.body);
    // Another request under the key is still refused: the fingerprint survived too.
    expect((await keyed(second.url, 'restart-1', { ...SHAHKAR, mobileNumber: '09120000000' })).status).toBe(422);
    // The record is read after the restart as before it.
    const read = await callGateway(second.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });
    expect(read.body).toMatchObject({ trackId, status: 'succeeded' });
    expect(sim.inquiryCalls).toBe(1);
    expect([...sim.chargesByTrackId.values()].reduce((sum, n) => sum + n, 0)).toBe(1);
  }, 120_000);
});
