/**
 * The simulator's other inquiries (added-operations.ts): a POST to any /api/v5 path of the
 * gateway's `upstreamPath` shape answers as CheckShahkar and IbanInquiry do (Bearer, §4.4 trackId
 * and requestHandlingType rules, credit, suppliers and charges, faults, latency, events), its
 * `data` echoing the fields it received with a synthetic result.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import type { AddedOperationData } from './added-operations.js';
import {
  CHECK_SHAHKAR_PATH,
  GET_TOKEN_PATH,
  SANDBOX_INPUT_OUTCOMES,
  UpstreamSimulator,
  type Envelope,
  type InquiryEvent,
  type TokenData,
} from './upstream-simulator.js';

const CARD_TO_IBAN = '/api/v5/KYC/CardToIban';
const OWNERSHIP = '/api/v5/KYC/IbanOwnership';
const CARD = { cardNumber: '6037991234567893' };
const CREDENTIALS = { username: 'sandbox-user', password: 'sandbox-password' };

type Res<T = AddedOperationData> = AxiosResponse<Envelope<T>>;

/** Two simulators: one answering any path, one knowing OWNERSHIP only and the sandbox's test data. */
const sim = new UpstreamSimulator();
const listed = new UpstreamSimulator({ addedOperationPaths: [OWNERSHIP], inputOutcomes: SANDBOX_INPUT_OUTCOMES });
let http: AxiosInstance;
let listedHttp: AxiosInstance;
let token: string;

async function tokenOf(client: AxiosInstance): Promise<string> {
  return (await client.post<Envelope<TokenData>>(GET_TOKEN_PATH, CREDENTIALS)).data.data!.accessToken;
}

/** `bearer` null: no Authorization header. */
function inquire(path: string, body: unknown, bearer: string | null = token, client = http): Promise<Res> {
  return client.post(path, body, { headers: bearer === null ? {} : { Authorization: `Bearer ${bearer}` } });
}

function expectError(res: Res, status: number, code: number, fields: string[] = []): void {
  expect({ status: res.status, code: res.data.meta.code, data: res.data.data }).toEqual({ status, code, data: null });
  expect(res.headers['x-track-id']).toBe(res.data.meta.trackId);
  expect(res.data.meta.errors.map((e) => e.field).sort()).toEqual(fields);
}

beforeAll(async () => {
  http = axios.create({ baseURL: await sim.start(), validateStatus: () => true });
  listedHttp = axios.create({ baseURL: await listed.start(), validateStatus: () => true });
});

afterAll(async () => {
  await Promise.all([sim.stop(), listed.stop()]);
});

beforeEach(async () => {
  sim.reset();
  token = await tokenOf(http);
});

describe('UpstreamSimulator: the other inquiries (operations the gateway adds)', () => {
  it('answers the envelope with the fields echoed and a deterministic result, charging the first supplier', async () => {
    const events: InquiryEvent[] = [];
    sim.on('inquiry', (e) => events.push(e));
    const res = await inquire(CARD_TO_IBAN, { ...CARD, requestHandlingType: 'standard' });
    const again = await inquire(CARD_TO_IBAN, CARD);
    const other = await inquire(OWNERSHIP, CARD);
    sim.removeAllListeners('inquiry');

    expect(res.status).toBe(200);
    expect(res.data.meta).toMatchObject({ isSuccess: true, code: 0, status: 'Success', errors: [] });
    expect(res.headers['x-track-id']).toBe(res.data.meta.trackId);
    expect(res.data.data).toEqual({ input: CARD, matched: true, reference: expect.stringMatching(/^[0-9a-f]{16}$/) });
    // The same question at the same path gets the same reference; another path another one.
    expect(again.data.data!.reference).toBe(res.data.data!.reference);
    expect(other.data.data!.reference).not.toBe(res.data.data!.reference);
    expect(sim.credit).toBe(1_000_000 - 3 * 100);
    expect(sim.chargeCount(res.data.meta.trackId)).toBe(1);
    expect(sim.attemptLog[0]).toEqual({ trackId: res.data.meta.trackId, supplier: 'primary', outcome: 'success' });
    expect(sim.requests[0]).toMatchObject({ path: CARD_TO_IBAN, body: { ...CARD, requestHandlingType: 'standard' } });
    expect(events[0]).toEqual({ path: CARD_TO_IBAN, trackId: res.data.meta.trackId, status: 200, code: 0 });
  });

  it('keeps the §4.4 trackId rules: echoed, once only, 400 on an invalid or zero UUID', async () => {
    const trackId = randomUUID();
    const first = await inquire(CARD_TO_IBAN, { ...CARD, trackId: trackId.toUpperCase() });
    expect([first.status, first.data.meta.trackId, first.headers['x-track-id']]).toEqual([200, trackId, trackId]);
    const duplicate = await inquire(CARD_TO_IBAN, { ...CARD, trackId });
    expectError(duplicate, 409, 5);
    expect(duplicate.data.meta.trackId).toBe(trackId);
    // Once only across paths too: the trackId is the upstream's, not an operation's.
    expectError(
      await inquire(CHECK_SHAHKAR_PATH, { nationalCode: '0012345679', mobileNumber: '09121234567', trackId }),
      409,
      5,
    );
    expectError(await inquire(CARD_TO_IBAN, { ...CARD, trackId: 'not-a-uuid' }), 400, 2, ['trackId']);
    expectError(await inquire(CARD_TO_IBAN, { ...CARD, trackId: '00000000-0000-0000-0000-000000000000' }), 400, 2, [
      'trackId',
    ]);
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('keeps the requestHandlingType rules: 400 on another value, advanced walks the chain and charges the success', async () => {
    expectError(await inquire(CARD_TO_IBAN, { ...CARD, requestHandlingType: 'Advanced' }), 400, 2, [
      'requestHandlingType',
    ]);
    sim.setSupplierFailure('primary', 'error');
    expectError(await inquire(CARD_TO_IBAN, CARD), 502, 15);
    const advanced = await inquire(CARD_TO_IBAN, { ...CARD, requestHandlingType: 'advanced' });
    expect(advanced.status).toBe(200);
    expect(sim.attemptLog.filter((a) => a.trackId === advanced.data.meta.trackId)).toEqual([
      { trackId: advanced.data.meta.trackId, supplier: 'primary', outcome: 'error' },
      { trackId: advanced.data.meta.trackId, supplier: 'secondary', outcome: 'success' },
    ]);
    expect(sim.credit).toBe(1_000_000 - 120);
    sim.setCredit(100);
    expectError(await inquire(CARD_TO_IBAN, { ...CARD, requestHandlingType: 'advanced' }), 402, 5);
  });

  it('needs the Bearer token first, then a non-empty string in every field of its own', async () => {
    expectError(await inquire(CARD_TO_IBAN, { cardNumber: 6037991234567893 }, null), 401, 6);
    expectError(await inquire(CARD_TO_IBAN, CARD, 'unknown-token'), 401, 6);
    expectError(await inquire(CARD_TO_IBAN, { cardNumber: 6037991234567893, note: '', ok: 'x' }), 400, 2, [
      'cardNumber',
      'note',
    ]);
    expect(sim.attemptLog).toEqual([]);
  });

  it('takes the faults and latency set for its path', async () => {
    sim.injectFault({ path: CARD_TO_IBAN, kind: 'http500' });
    expect(
      (await inquire(CHECK_SHAHKAR_PATH, { nationalCode: '0012345679', mobileNumber: '09121234567' })).status,
    ).toBe(200);
    expectError(await inquire(CARD_TO_IBAN, CARD), 500, 1);
    sim.setLatency(40);
    const started = performance.now();
    expect((await inquire(CARD_TO_IBAN, CARD)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(40 - 5);
  });

  it('with addedOperationPaths knows those only, and answers the scripted test data by any field', async () => {
    const bearer = await tokenOf(listedHttp);
    expectError(await inquire(CARD_TO_IBAN, CARD, bearer, listedHttp), 404, 3);
    const owner = (nationalCode: string) =>
      inquire(OWNERSHIP, { iban: 'IR820170000000123456789012', nationalCode }, bearer, listedHttp);
    expect((await owner('0012345679')).data.data!.matched).toBe(true);
    expect((await owner('0499370902')).data.data!.matched).toBe(false);
    expectError(await owner('0499370910'), 502, 15);
    // The unknown path was answered by routing, before it could count as an inquiry.
    expect(listed.inquiryCalls).toBe(3);
  });
});
