/**
 * What the ledger keeps of people (docs/api.md §6, issue 33), read from the raw rows of the run's
 * PostgreSQL: the upstream `data` only sealed, or not at all without a key ring (said once at
 * start, naming STORE_ENCRYPTION_KEYS, with the in-process store too); end users only as a keyed
 * pseudonym, which still finds their records after a rotation of SUBJECT_HASH_KEYS.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { PgLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { CapturedLog } from './support/captured-log.js';
import { IBAN, NATIONAL_CODE, SHAHKAR } from './support/fixtures.js';
import { TEST_CLIENTS, callGateway, sha256, startGateway, type RunningGateway } from './support/gateway.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const STORE_KEY = `k1:${randomBytes(32).toString('base64')}`;
const OLD = randomBytes(32);
const NEW = randomBytes(32);
const ISSUER = 'https://id.example.test';
/** An identity provider that uses national codes as `sub`: a plain SHA-256 of it is reversed in minutes. */
const SUB = NATIONAL_CODE;

let sim: UpstreamSimulator;
let db: LedgerDatabase;
let signing: CryptoKey;
let jwtEnv: Record<string, string>;

beforeAll(async () => {
  sim = new UpstreamSimulator();
  await sim.start(0);
  // The run's PostgreSQL (ledger-postgres.js), which every gateway of this file writes to.
  db = new PgLedgerDatabase(process.env.VGW_TEST_LEDGER_DATABASE_URL ?? 'postgres://run-postgres-missing');
  await migrate(db);
  const keys = await generateKeyPair('RS256', { extractable: true });
  signing = keys.privateKey;
  jwtEnv = { JWT_PUBLIC_KEY: await exportSPKI(keys.publicKey), JWT_ISSUER: ISSUER, JWT_AUDIENCE: 'vgw' };
});

afterAll(async () => {
  await db?.close();
  await sim?.stop();
});

/** A gateway of this file (in-process store), its log captured. */
async function gateway(env: Record<string, string | undefined>): Promise<{ g: RunningGateway; log: CapturedLog }> {
  const log = new CapturedLog();
  const g = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, ...env }, { logger: log });
  return { g, log };
}

/** Waits until the in-process drain has written this inquiry's entry (it polls every 250 ms). */
async function written(trackId: string): Promise<void> {
  for (let tries = 0; tries < 200; tries += 1) {
    const rows = await db.query('SELECT 1 FROM ledger_entries WHERE track_id = $1', [trackId]);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`entry of ${trackId} never written`);
}

/** Every string leaf of a JSON value (names, numbers, statuses). */
function leaves(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return [];
}

describe('sealed or not kept', () => {
  it('keeps the upstream data sealed with a key ring, and no result at all without one (warned once)', async () => {
    const sealed = await gateway({ STORE_ENCRYPTION_KEYS: STORE_KEY });
    const clear = await gateway({});
    try {
      const answers = [];
      for (const { g } of [sealed, clear]) {
        const answer = await callGateway(g.url, 'POST', '/v1/kyc/iban', {
          apiKey: TEST_CLIENTS.full.key,
          json: { iban: IBAN },
        });
        expect(answer.status).toBe(200);
        answers.push(answer.body);
        await written(answer.body.trackId as string);
      }
      const raw = async (trackId: unknown) =>
        db.query<{ sealed_data: string }>('SELECT sealed_data FROM ledger_results WHERE track_id = $1', [trackId]);

      const [withKey] = await raw(answers[0].trackId);
      expect(withKey.sealed_data).toMatch(/^enc:v1:k1:/);
      const secrets = [IBAN, ...leaves(answers[0].data).filter((leaf) => leaf.length >= 4)];
      expect(secrets.length).toBeGreaterThan(2);
      for (const secret of secrets)
        expect({ secret, found: withKey.sealed_data.includes(secret) }).toMatchObject({ found: false });
      // Without a key ring: the entry is written, no result row.
      expect(await db.query('SELECT 1 FROM ledger_entries WHERE track_id = $1', [answers[1].trackId])).toHaveLength(1);
      expect(await raw(answers[1].trackId)).toEqual([]);
      // A gateway without the key ring reads that inquiry from the ledger: its facts without the
      // data it cannot open, not a 503 for as long as the result is kept.
      const read = await callGateway(clear.g.url, 'GET', `/v1/inquiries/${answers[0].trackId as string}`, {
        apiKey: TEST_CLIENTS.full.key,
      });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ trackId: answers[0].trackId, status: 'succeeded' });
      expect(read.body).not.toHaveProperty('data');

      const warned = (log: CapturedLog) => log.lines.filter((line) => line.includes('STORE_ENCRYPTION_KEYS unset'));
      expect(warned(clear.log)).toHaveLength(1);
      expect(warned(clear.log)[0]).toMatch(/^warn: .*the ledger keeps no upstream results/);
      expect(warned(sealed.log)).toHaveLength(0);
    } finally {
      await Promise.all([sealed.g.close(), clear.g.close()]);
    }
  }, 30_000);
});

describe('end users pseudonymised with a key', () => {
  const token = () =>
    new SignJWT({ azp: 'app', scope: 'kyc:shahkar inquiries:read' })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject(SUB)
      .setIssuer(ISSUER)
      .setAudience('vgw')
      .setExpirationTime('5m')
      .sign(signing);
  const ring = (...keys: Array<[string, Buffer]>) =>
    keys.map(([id, key]) => `${id}:${key.toString('base64')}`).join(',');

  it('records an HMAC of the sub, and the user still reads its record after a rotation', async () => {
    const first = await gateway({ ...jwtEnv, SUBJECT_HASH_KEYS: ring(['old', OLD]) });
    const answer = await callGateway(first.g.url, 'POST', '/v1/kyc/shahkar', {
      headers: { authorization: `Bearer ${await token()}` },
      json: SHAHKAR,
    });
    expect(answer.status).toBe(200);
    const trackId = answer.body.trackId as string;
    await written(trackId);
    await first.g.close();

    const [row] = await db.query<{ subject_sha256: string }>(
      'SELECT subject_sha256 FROM ledger_entries WHERE track_id = $1',
      [trackId],
    );
    expect(row.subject_sha256).not.toBe(sha256(SUB));
    expect(row.subject_sha256).toBe(createHmac('sha256', OLD).update(SUB).digest('hex'));

    // The record is gone with the process: the ledger answers, under the rotated ring.
    const rotated = await gateway({ ...jwtEnv, SUBJECT_HASH_KEYS: ring(['new', NEW], ['old', OLD]) });
    const dropped = await gateway({ ...jwtEnv, SUBJECT_HASH_KEYS: ring(['new', NEW]) });
    try {
      const jwt = await token();
      const read = (g: RunningGateway) =>
        callGateway(g.url, 'GET', `/v1/inquiries/${trackId}`, { headers: { authorization: `Bearer ${jwt}` } });
      const seen = await read(rotated.g);
      expect(seen.status).toBe(200);
      expect(seen.body).toMatchObject({ trackId, status: 'succeeded' });
      // Once the old key has left the ring its records no longer match: the hash is keyed.
      expect((await read(dropped.g)).status).toBe(404);
    } finally {
      await Promise.all([rotated.g.close(), dropped.g.close()]);
    }
  }, 30_000);
});
