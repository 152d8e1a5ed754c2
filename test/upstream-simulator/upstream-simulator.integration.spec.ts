import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { describe, it, expect, beforeAll, afterAll, beforeEach, jest } from '@jest/globals';
import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import {
  CHECK_SHAHKAR_PATH,
  GET_TOKEN_PATH,
  IBAN_INQUIRY_PATH,
  SANDBOX_INPUT_OUTCOMES,
  UpstreamSimulator,
  type Envelope,
  type InquiryEvent,
  type TokenData,
  type TokenEvent,
} from './upstream-simulator.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const START = 1_700_000_000_000;
const CREDENTIALS = { username: 'sandbox-user', password: 'sandbox-password' };
const SHAHKAR = { nationalCode: '0012345679', mobileNumber: '09121234567' };
const IBAN = 'IR820170000000123456789012';

type Res<T = unknown> = AxiosResponse<Envelope<T>>;

let clock = START;
const sim = new UpstreamSimulator({ now: () => clock });
let http: AxiosInstance;

beforeAll(async () => {
  const url = await sim.start(0);
  http = axios.create({ baseURL: url, validateStatus: () => true });
});

afterAll(async () => {
  await sim.stop();
});

beforeEach(() => {
  clock = START;
  sim.reset();
});

async function getToken(body: unknown = CREDENTIALS): Promise<Res<TokenData>> {
  return http.post(GET_TOKEN_PATH, body);
}

async function accessToken(): Promise<string> {
  const res = await getToken();
  expect(res.status).toBe(200);
  return res.data.data!.accessToken;
}

async function inquire<T = unknown>(path: string, body: unknown, token?: string): Promise<Res<T>> {
  return http.post(path, body, { headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });
}

function expectError(res: Res, http: number, code: number, errorType: string, message?: string): void {
  expect(res.status).toBe(http);
  expect(res.data.meta.isSuccess).toBe(false);
  expect(res.data.meta.code).toBe(code);
  expect(res.data.meta.errorType).toBe(errorType);
  expect(res.data.meta.status).toBe('Failed');
  expect(res.data.data).toBeNull();
  expect(res.headers['x-track-id']).toBe(res.data.meta.trackId);
  if (message !== undefined) {
    expect(res.data.meta.message).toBe(message);
    expect(res.data.meta.errorMessage).toBe(message);
  }
}

function fieldsOf(res: Res): string[] {
  return res.data.meta.errors.map((e) => e.field).sort();
}

describe('UpstreamSimulator: §4.1 GetToken', () => {
  it('variant A (credentials) returns the §2.2 envelope with §2.3 token data', async () => {
    const events: TokenEvent[] = [];
    sim.on('token', (e) => events.push(e));
    const res = await getToken();
    sim.removeAllListeners('token');

    expect(res.status).toBe(200);
    expect(res.data.meta).toEqual({
      trackId: res.headers['x-track-id'] as string,
      status: 'Success',
      isSuccess: true,
      code: 0,
      message: 'Operation completed successfully',
      errorMessage: null,
      errorType: null,
      errors: [],
    });
    expect(res.data.meta.trackId).toMatch(UUID_V4);
    const data = res.data.data!;
    expect(Object.keys(data).sort()).toEqual(['accessToken', 'expiresTn', 'refreshToken', 'tokenType']);
    expect(data.tokenType).toBe('Bearer');
    expect(data.expiresTn).toBe(28800);
    expect(data.accessToken).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(data.refreshToken).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(data.accessToken).not.toBe(data.refreshToken);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 0, failed: 0 });
    expect(sim.issuedAccessTokens).toBe(1);
    expect(events).toEqual([{ variant: 'credentials', ok: true, status: 200 }]);
  });

  it('variant B (refreshToken) returns a fresh pair; a reusable refresh token stays valid', async () => {
    const first = (await getToken()).data.data!;
    const renewed = await getToken({ refreshToken: first.refreshToken });
    expect(renewed.status).toBe(200);
    expect(renewed.data.meta.code).toBe(0);
    const pair = renewed.data.data!;
    expect(pair.tokenType).toBe('Bearer');
    expect(pair.expiresTn).toBe(28800);
    expect(pair.accessToken).not.toBe(first.accessToken);
    expect(pair.refreshToken).not.toBe(first.refreshToken);
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken)).status).toBe(200);
    expect((await getToken({ refreshToken: first.refreshToken })).status).toBe(200);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 2, failed: 0 });
    expect(sim.issuedAccessTokens).toBe(3);
  });

  it('single-use rotation invalidates a refresh token once it is used', async () => {
    const single = new UpstreamSimulator({ refreshTokenRotation: 'single-use' });
    const url = await single.start();
    try {
      const login = await axios.post<Envelope<TokenData>>(`${url}${GET_TOKEN_PATH}`, CREDENTIALS);
      const rt = login.data.data!.refreshToken;
      const ok = await axios.post<Envelope<TokenData>>(`${url}${GET_TOKEN_PATH}`, { refreshToken: rt });
      expect(ok.status).toBe(200);
      const again = await axios.post<Envelope>(
        `${url}${GET_TOKEN_PATH}`,
        { refreshToken: rt },
        { validateStatus: () => true },
      );
      expectError(again, 401, 6, 'UnAuthorized');
      const next = await axios.post<Envelope<TokenData>>(`${url}${GET_TOKEN_PATH}`, {
        refreshToken: ok.data.data!.refreshToken,
      });
      expect(next.status).toBe(200);
    } finally {
      await single.stop();
    }
  });

  it('wrong username or password → 401 code 6 UnAuthorized', async () => {
    expectError(
      await getToken({ ...CREDENTIALS, password: 'nope' }),
      401,
      6,
      'UnAuthorized',
      'Username or password is incorrect',
    );
    expectError(
      await getToken({ ...CREDENTIALS, username: 'other' }),
      401,
      6,
      'UnAuthorized',
      'Username or password is incorrect',
    );
    expect(sim.tokenCalls).toEqual({ credentials: 2, refresh: 0, failed: 2 });
    expect(sim.issuedAccessTokens).toBe(0);
  });

  it('invalid body or missing username/password → 400 code 2 BadRequest with field errors', async () => {
    const noPassword = await getToken({ username: 'sandbox-user' });
    expectError(noPassword, 400, 2, 'BadRequest');
    expect(fieldsOf(noPassword)).toEqual(['password']);
    expect(noPassword.data.meta.errors[0]).toEqual({ field: 'password', message: 'password is required' });

    const empty = await getToken({});
    expectError(empty, 400, 2, 'BadRequest');
    expect(fieldsOf(empty)).toEqual(['password', 'username']);

    const notJson = await http.post<Envelope>(GET_TOKEN_PATH, '{"username": ', {
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(notJson, 400, 2, 'BadRequest');
    expect(fieldsOf(notJson)).toEqual(['body']);

    expectError(await getToken([CREDENTIALS]), 400, 2, 'BadRequest');
    expectError(await getToken({ ...CREDENTIALS, password: 42 }), 400, 2, 'BadRequest');
    const both = await getToken({ ...CREDENTIALS, refreshToken: 'x' });
    expectError(both, 400, 2, 'BadRequest');
    expect(fieldsOf(both)).toEqual(['body']);
    const emptyRefresh = await getToken({ refreshToken: '' });
    expectError(emptyRefresh, 400, 2, 'BadRequest');
    expect(fieldsOf(emptyRefresh)).toEqual(['refreshToken']);
    expect(sim.tokenCalls).toEqual({ credentials: 5, refresh: 2, failed: 7 });
  });

  it("password never set → 401 code 6 'Api password has not been set'; works once set", async () => {
    const unset = new UpstreamSimulator({ password: null });
    const url = await unset.start();
    try {
      const post = (body: unknown) =>
        axios.post<Envelope<TokenData>>(`${url}${GET_TOKEN_PATH}`, body, { validateStatus: () => true });
      const res = await post({ username: 'sandbox-user', password: 'anything' });
      expectError(res, 401, 6, 'UnAuthorized', 'Api password has not been set');
      unset.setPassword('new-secret');
      expect((await post({ username: 'sandbox-user', password: 'new-secret' })).status).toBe(200);
      unset.setPassword(null);
      expectError(
        await post({ username: 'sandbox-user', password: 'new-secret' }),
        401,
        6,
        'UnAuthorized',
        'Api password has not been set',
      );
    } finally {
      await unset.stop();
    }
  });

  it('rule 4: a password change invalidates earlier refresh tokens at once; credentials work; access tokens live on', async () => {
    const before = (await getToken()).data.data!;
    sim.setPassword('changed');
    expectError(
      await getToken({ refreshToken: before.refreshToken }),
      401,
      6,
      'UnAuthorized',
      'Refresh token is invalid',
    );
    expectError(await getToken(CREDENTIALS), 401, 6, 'UnAuthorized');
    const after = await getToken({ username: 'sandbox-user', password: 'changed' });
    expect(after.status).toBe(200);
    expect((await getToken({ refreshToken: after.data.data!.refreshToken })).status).toBe(200);
    // Documented choice: access tokens issued before stay valid until they expire.
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, before.accessToken)).status).toBe(200);
    // Setting the same password again is still a reset.
    sim.setPassword('changed');
    expectError(await getToken({ refreshToken: after.data.data!.refreshToken }), 401, 6, 'UnAuthorized');
  });

  it('disabled account → 403 code 9 Inaccessible for both variants and for inquiries', async () => {
    const pair = (await getToken()).data.data!;
    sim.disableAccount();
    expectError(await getToken(), 403, 9, 'Inaccessible');
    expectError(await getToken({ refreshToken: pair.refreshToken }), 403, 9, 'Inaccessible');
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken), 403, 9, 'Inaccessible');
    expect(sim.attemptLog).toHaveLength(0);
    sim.disableAccount(false);
    expect((await getToken({ refreshToken: pair.refreshToken })).status).toBe(200);
  });

  it('expiresTn reflects setTokenLifetimes; an expired access token is rejected (clock moved, no sleep)', async () => {
    sim.setTokenLifetimes({ accessSeconds: 10 });
    const res = await getToken();
    expect(res.data.data!.expiresTn).toBe(10);
    const token = res.data.data!.accessToken;
    clock += 9_999;
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token)).status).toBe(200);
    clock += 1;
    const expired = await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expectError(expired, 401, 6, 'UnAuthorized', 'Access token has expired');
    expect(sim.rejectedExpiredTokens).toBe(1);
    // renew with the refresh token
    const renewed = await getToken({ refreshToken: res.data.data!.refreshToken });
    expect(renewed.status).toBe(200);
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, renewed.data.data!.accessToken)).status).toBe(200);
  });

  it('default lifetimes: access token valid for 28800 s, refresh token for one year', async () => {
    const pair = (await getToken()).data.data!;
    clock += 28_800_000 - 1;
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken)).status).toBe(200);
    clock += 1;
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken)).status).toBe(401);
    clock = START + 365 * 24 * 3600 * 1000 - 1;
    const renewed = await getToken({ refreshToken: pair.refreshToken });
    expect(renewed.status).toBe(200);
    clock = START + 365 * 24 * 3600 * 1000;
    expectError(
      await getToken({ refreshToken: pair.refreshToken }),
      401,
      6,
      'UnAuthorized',
      'Refresh token has expired',
    );
  });

  it('refresh token lifetime setting and revokeAllRefreshTokens', async () => {
    sim.setTokenLifetimes({ refreshSeconds: 60 });
    const pair = (await getToken()).data.data!;
    clock += 60_000;
    expectError(await getToken({ refreshToken: pair.refreshToken }), 401, 6, 'UnAuthorized');
    const fresh = (await getToken()).data.data!;
    sim.revokeAllRefreshTokens();
    expectError(await getToken({ refreshToken: fresh.refreshToken }), 401, 6, 'UnAuthorized');
    expectError(await getToken({ refreshToken: 'never-issued' }), 401, 6, 'UnAuthorized', 'Refresh token is invalid');
  });

  it('expireAllAccessTokens makes every issued access token expired', async () => {
    const a = await accessToken();
    const b = await accessToken();
    sim.expireAllAccessTokens();
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, a), 401, 6, 'UnAuthorized');
    expectError(await inquire(IBAN_INQUIRY_PATH, { iban: IBAN }, b), 401, 6, 'UnAuthorized');
    expect(sim.rejectedExpiredTokens).toBe(2);
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, await accessToken())).status).toBe(200);
  });
});

describe('UpstreamSimulator: §5.1 Bearer token', () => {
  it('missing, wrong-scheme or unknown token → 401 code 6; not counted as expired', async () => {
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR), 401, 6, 'UnAuthorized');
    const basic = await http.post<Envelope>(CHECK_SHAHKAR_PATH, SHAHKAR, { headers: { Authorization: 'Basic abc' } });
    expectError(basic, 401, 6, 'UnAuthorized');
    expectError(
      await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, 'unknown-token'),
      401,
      6,
      'UnAuthorized',
      'Access token is invalid',
    );
    expect(sim.rejectedExpiredTokens).toBe(0);
    expect(sim.inquiryCalls).toBe(3);
    expect(sim.attemptLog).toHaveLength(0);
  });

  it('auth comes before body validation', async () => {
    expectError(await inquire(CHECK_SHAHKAR_PATH, { trackId: 'bad' }), 401, 6, 'UnAuthorized');
  });

  it('the scheme name is case-insensitive', async () => {
    const token = await accessToken();
    const res = await http.post(CHECK_SHAHKAR_PATH, SHAHKAR, { headers: { Authorization: `bearer ${token}` } });
    expect(res.status).toBe(200);
  });

  it('records every inquiry request as received', async () => {
    const token = await accessToken();
    const trackId = randomUUID();
    await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId, extra: 1 }, token);
    await inquire(IBAN_INQUIRY_PATH, { iban: IBAN });
    expect(sim.requests).toEqual([
      {
        path: CHECK_SHAHKAR_PATH,
        body: { ...SHAHKAR, trackId, extra: 1 },
        authorization: `Bearer ${token}`,
        trackId,
        at: START,
      },
      { path: IBAN_INQUIRY_PATH, body: { iban: IBAN }, at: START },
    ]);
  });
});

describe('UpstreamSimulator: §4.4 trackId', () => {
  let token: string;
  beforeEach(async () => {
    token = await accessToken();
  });

  it('rule 2/4: omitted trackId → v4 UUID generated, returned in meta.trackId and X-Track-Id', async () => {
    const res = await inquire<{ isMatch: boolean }>(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expect(res.status).toBe(200);
    expect(res.data.meta.trackId).toMatch(UUID_V4);
    expect(res.headers['x-track-id']).toBe(res.data.meta.trackId);
    expect(sim.chargeCount(res.data.meta.trackId)).toBe(1);
    expect(sim.attemptLog).toEqual([{ trackId: res.data.meta.trackId, supplier: 'primary', outcome: 'success' }]);
  });

  it('a sent trackId is echoed (lower-cased)', async () => {
    const trackId = randomUUID();
    const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId: trackId.toUpperCase() }, token);
    expect(res.status).toBe(200);
    expect(res.data.meta.trackId).toBe(trackId);
    expect(res.headers['x-track-id']).toBe(trackId);
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it.each([
    ['not a UUID', 'abc'],
    ['the zero UUID', '00000000-0000-0000-0000-000000000000'],
    ['a number', 12345],
    ['braced', `{${'3f2504e0-4f89-41d3-9a0c-0305e82c3301'}}`],
  ])('rule 3: trackId %s → 400 with a field error on trackId', async (_label, trackId) => {
    const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    expectError(res, 400, 2, 'BadRequest', 'One or more validation errors occurred');
    expect(res.data.meta.errors).toEqual([{ field: 'trackId', message: 'trackId must be a valid, non-zero UUID' }]);
    expect(res.data.meta.trackId).toMatch(UUID_V4);
    expect(res.data.meta.trackId).not.toBe(trackId);
    expect(sim.attemptLog).toHaveLength(0);
    expect(sim.credit).toBe(1_000_000);
  });

  it('rule 5: a duplicate trackId is rejected (409 code 5 LogicError) and not charged twice', async () => {
    const trackId = randomUUID();
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).status).toBe(200);
    const dup = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    expectError(dup, 409, 5, 'LogicError', 'Duplicate trackId');
    expect(dup.data.meta.trackId).toBe(trackId);
    // also across operations
    expectError(await inquire(IBAN_INQUIRY_PATH, { iban: IBAN, trackId }, token), 409, 5, 'LogicError');
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.chargesByTrackId.get(trackId)).toBe(1);
    expect(sim.credit).toBe(1_000_000 - 100);
    expect(sim.attemptLog).toHaveLength(1);
  });

  it('rule 5 under concurrency: only one of two simultaneous requests with the same trackId is processed', async () => {
    const trackId = randomUUID();
    const results = await Promise.all([
      inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token),
      inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.credit).toBe(1_000_000 - 100);
  });

  it('a request rejected with 401 or 400 does not consume its trackId', async () => {
    const trackId = randomUUID();
    const unauth = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId });
    expectError(unauth, 401, 6, 'UnAuthorized');
    expect(unauth.data.meta.trackId).toBe(trackId);
    const invalid = await inquire(CHECK_SHAHKAR_PATH, { nationalCode: SHAHKAR.nationalCode, trackId }, token);
    expectError(invalid, 400, 2, 'BadRequest');
    expect(invalid.data.meta.trackId).toBe(trackId);
    const ok = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    expect(ok.status).toBe(200);
    expect(ok.data.meta.trackId).toBe(trackId);
    expect(sim.chargeCount(trackId)).toBe(1);
  });
});

describe('UpstreamSimulator: body validation', () => {
  let token: string;
  beforeEach(async () => {
    token = await accessToken();
  });

  it('rule 11: requestHandlingType other than standard/advanced → 400 field error (case-sensitive)', async () => {
    for (const value of ['premium', 'Advanced', 1]) {
      const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: value }, token);
      expectError(res, 400, 2, 'BadRequest');
      expect(res.data.meta.errors).toEqual([
        { field: 'requestHandlingType', message: "requestHandlingType must be 'standard' or 'advanced'" },
      ]);
    }
    expect(sim.attemptLog).toHaveLength(0);
  });

  it('missing or non-string operation fields → 400 code 2 with one error per field', async () => {
    const shahkar = await inquire(
      CHECK_SHAHKAR_PATH,
      { nationalCode: 12, trackId: 'x', requestHandlingType: 'x' },
      token,
    );
    expectError(shahkar, 400, 2, 'BadRequest');
    expect(fieldsOf(shahkar)).toEqual(['mobileNumber', 'nationalCode', 'requestHandlingType', 'trackId']);
    const iban = await inquire(IBAN_INQUIRY_PATH, { iban: ['IR'] }, token);
    expectError(iban, 400, 2, 'BadRequest');
    expect(iban.data.meta.errors).toEqual([
      { field: 'iban', message: 'iban is required and must be a non-empty string' },
    ]);
    const empty = await inquire(IBAN_INQUIRY_PATH, { iban: '' }, token);
    expect(fieldsOf(empty)).toEqual(['iban']);
  });

  it('a body that is not a JSON object → 400 field body', async () => {
    const res = await http.post<Envelope>(IBAN_INQUIRY_PATH, 'iban=IR', {
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectError(res, 400, 2, 'BadRequest');
    expect(fieldsOf(res)).toEqual(['body']);
    const broken = await http.post<Envelope>(IBAN_INQUIRY_PATH, '{', {
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    });
    expectError(broken, 400, 2, 'BadRequest');
    expect(sim.attemptLog).toHaveLength(0);
  });

  it('unknown /api/v5 path or method → 404 code 3 NotFound envelope', async () => {
    // Any other POST /api/v5/<segments> is one of the upstream's other inquiries (added-operations.ts).
    for (const path of ['/api/v5/KYC/Un.known', '/api/v5/KYC//Unknown', `${CHECK_SHAHKAR_PATH}/`]) {
      expectError(await inquire(path, {}, token), 404, 3, 'NotFound');
    }
    expect((await http.get<Envelope>('/api/v5/KYC/Unknown')).data.meta.code).toBe(3);
    expect((await http.get<Envelope>(CHECK_SHAHKAR_PATH)).data.meta.code).toBe(3);
    expect((await http.post('/api/v4/KYC/CheckShahkar', SHAHKAR)).status).toBe(404);
    expect(sim.inquiryCalls).toBe(0);
  });
});

describe('UpstreamSimulator: suppliers and credit (§4.4 rules 6-10)', () => {
  let token: string;
  beforeEach(async () => {
    token = await accessToken();
  });

  it('standard: success charges exactly the first supplier', async () => {
    const res = await inquire<{ isMatch: boolean }>(
      CHECK_SHAHKAR_PATH,
      { ...SHAHKAR, requestHandlingType: 'standard' },
      token,
    );
    expect(res.status).toBe(200);
    expect(res.data.data).toEqual({ isMatch: true });
    expect(sim.credit).toBe(1_000_000 - 100);
    expect(sim.snapshot().reserved).toBe(0);
  });

  it('rule 6: standard calls only the first supplier, even when it fails (502 code 15 ProviderError)', async () => {
    sim.setSupplierFailure('primary', 'error');
    const trackId = randomUUID();
    const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    expectError(res, 502, 15, 'ProviderError', 'Supplier error');
    expect(res.data.meta.trackId).toBe(trackId);
    expect(sim.attemptLog).toEqual([{ trackId, supplier: 'primary', outcome: 'error' }]);
    expect(sim.credit).toBe(1_000_000);
    expect(sim.chargeCount(trackId)).toBe(0);
    expect(sim.snapshot().reserved).toBe(0);
    // the trackId was registered
    sim.setSupplierFailure('primary', null);
    expectError(await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token), 409, 5, 'LogicError');
  });

  it('standard with a timing-out first supplier → 504 code 14 RequestTimeOut', async () => {
    sim.setSupplierFailure('primary', 'timeout');
    const res = await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expectError(res, 504, 14, 'RequestTimeOut', 'Supplier timed out');
    expect(sim.attemptLog).toEqual([{ trackId: res.data.meta.trackId, supplier: 'primary', outcome: 'timeout' }]);
  });

  it('rules 7, 9, 10: advanced walks on after failures and charges only the successful attempt', async () => {
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierFailure('secondary', 'timeout');
    const trackId = randomUUID();
    const res = await inquire(IBAN_INQUIRY_PATH, { iban: IBAN, trackId, requestHandlingType: 'advanced' }, token);
    expect(res.status).toBe(200);
    expect(res.data.meta.trackId).toBe(trackId);
    expect(sim.attemptLog).toEqual([
      { trackId, supplier: 'primary', outcome: 'error' },
      { trackId, supplier: 'secondary', outcome: 'timeout' },
      { trackId, supplier: 'tertiary', outcome: 'success' },
    ]);
    expect(sim.credit).toBe(1_000_000 - 150);
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.snapshot().reserved).toBe(0);
  });

  it('supplierLatencyMs: each supplier attempt takes that long, after processing (an advanced chain of three takes three)', async () => {
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierFailure('secondary', 'error');
    sim.setSupplierLatency(150);
    try {
      const started = performance.now();
      const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token);
      expect(res.status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 150 - 5);
    } finally {
      sim.setSupplierFailure('primary', null);
      sim.setSupplierFailure('secondary', null);
      sim.setSupplierLatency(0);
    }
  });

  it('advanced stops at the first success', async () => {
    sim.setSupplierFailure('primary', 'error');
    const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token);
    expect(res.status).toBe(200);
    expect(sim.attemptLog.map((a) => `${a.supplier}:${a.outcome}`)).toEqual(['primary:error', 'secondary:success']);
    expect(sim.credit).toBe(1_000_000 - 120);
  });

  it('advanced with every supplier failing: 502 when the last was an error, 504 when a timeout; nothing charged', async () => {
    sim.setSupplierFailure('primary', 'timeout');
    sim.setSupplierFailure('secondary', 'timeout');
    sim.setSupplierFailure('tertiary', 'error');
    expectError(
      await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token),
      502,
      15,
      'ProviderError',
    );
    sim.setSupplierFailure('tertiary', 'timeout');
    sim.setSupplierFailure('primary', 'error');
    expectError(
      await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token),
      504,
      14,
      'RequestTimeOut',
    );
    expect(sim.attemptLog).toHaveLength(6);
    expect(sim.credit).toBe(1_000_000);
    expect(sim.chargesByTrackId.size).toBe(0);
    expect(sim.snapshot().reserved).toBe(0);
  });

  it('rule 8: advanced is rejected up front when the credit does not cover the whole chain (402 code 5)', async () => {
    sim.setCredit(369); // first supplier (100) affordable, chain (370) not
    const trackId = randomUUID();
    const res = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId, requestHandlingType: 'advanced' }, token);
    expectError(res, 402, 5, 'LogicError', 'Insufficient credit');
    expect(res.data.meta.trackId).toBe(trackId);
    expect(sim.attemptLog).toHaveLength(0);
    expect(sim.credit).toBe(369);
    // standard only needs the first supplier
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token)).status).toBe(200);
    expect(sim.credit).toBe(269);
    sim.setCredit(370);
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token)).status).toBe(
      200,
    );
    expect(sim.credit).toBe(270);
  });

  it('standard with credit below the first supplier cost → 402', async () => {
    sim.setCredit(99);
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token), 402, 5, 'LogicError', 'Insufficient credit');
    expect(sim.credit).toBe(99);
  });

  it('credit decreases by exactly the successful supplier cost (custom suppliers)', async () => {
    sim.setSuppliers([
      { name: 'a', cost: 7 },
      { name: 'b', cost: 11 },
    ]);
    sim.setCredit(1000);
    sim.setSupplierFailure('a', 'error');
    await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, requestHandlingType: 'advanced' }, token);
    expect(sim.credit).toBe(989);
    sim.setSupplierFailure('a', null);
    await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expect(sim.credit).toBe(982);
    expect(sim.attemptLog.map((a) => a.supplier)).toEqual(['a', 'b', 'a']);
  });

  it('an empty supplier chain → 502 ProviderError', async () => {
    sim.setSuppliers([]);
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token), 502, 15, 'ProviderError', 'No supplier available');
  });

  it('CheckShahkar uses the matcher; a non-match is a charged success', async () => {
    const seen: string[][] = [];
    sim.setShahkarMatcher((nc, mobile) => {
      seen.push([nc, mobile]);
      return false;
    });
    const res = await inquire<{ isMatch: boolean }>(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expect(res.status).toBe(200);
    expect(res.data.data).toEqual({ isMatch: false });
    expect(seen).toEqual([[SHAHKAR.nationalCode, SHAHKAR.mobileNumber]]);
    expect(sim.credit).toBe(1_000_000 - 100);
  });

  it('an internal error → 500 code 1 ServerError; the reservation is released and nothing charged', async () => {
    sim.setShahkarMatcher(() => {
      throw new Error('boom');
    });
    const res = await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token);
    expectError(res, 500, 1, 'ServerError', 'Internal server error');
    expect(sim.credit).toBe(1_000_000);
    expect(sim.snapshot().reserved).toBe(0);
    expect(sim.chargesByTrackId.size).toBe(0);
  });

  it('IbanInquiry returns plausible, deterministic data', async () => {
    const a = await inquire<Record<string, unknown>>(IBAN_INQUIRY_PATH, { iban: IBAN }, token);
    const b = await inquire<Record<string, unknown>>(IBAN_INQUIRY_PATH, { iban: IBAN }, token);
    expect(a.status).toBe(200);
    expect(a.data.data).toMatchObject({ iban: IBAN, bankName: 'Bank Melli Iran', accountStatus: 'ACTIVE' });
    expect(a.data.data!.owners).toEqual([{ firstName: expect.any(String), lastName: expect.any(String) }]);
    expect(b.data.data).toEqual(a.data.data);
    expect(a.data.meta.trackId).not.toBe(b.data.meta.trackId);
  });
});

describe('UpstreamSimulator: scripted answers to test inputs (inputOutcomes)', () => {
  const scripted = new UpstreamSimulator({ inputOutcomes: SANDBOX_INPUT_OUTCOMES });
  let client: AxiosInstance;
  let bearer: { Authorization: string };
  beforeAll(async () => {
    client = axios.create({ baseURL: await scripted.start(0), validateStatus: () => true });
  });
  afterAll(() => scripted.stop());
  beforeEach(async () => {
    scripted.reset();
    const token = await client.post<Envelope<TokenData>>(GET_TOKEN_PATH, CREDENTIALS);
    bearer = { Authorization: `Bearer ${token.data.data!.accessToken}` };
  });
  const ask = (path: string, body: object): Promise<Res> => client.post(path, body, { headers: bearer });

  it('no-match: a charged success with isMatch false', async () => {
    const res = await ask(CHECK_SHAHKAR_PATH, { nationalCode: '0499370902', mobileNumber: '09121234567' });
    expect({ status: res.status, data: res.data.data }).toEqual({ status: 200, data: { isMatch: false } });
    expect(scripted.chargesByTrackId.get(res.data.meta.trackId)).toBe(1);
  });

  it('suppliers-fail: every attempt fails, advanced too (502/15), nothing charged', async () => {
    for (const handling of ['standard', 'advanced']) {
      const res = await ask(IBAN_INQUIRY_PATH, { iban: 'IR490170000000000000000002', requestHandlingType: handling });
      expectError(res, 502, 15, 'ProviderError');
    }
    expect(scripted.attemptLog.map((a) => a.outcome)).toEqual(['error', 'error', 'error', 'error']);
    expect(scripted.credit).toBe(1_000_000);
  });

  it('first-supplier-fails: standard 502, advanced walks on and the second supplier is charged', async () => {
    const body = { nationalCode: '0499370929', mobileNumber: '09121234567' };
    expectError(await ask(CHECK_SHAHKAR_PATH, body), 502, 15, 'ProviderError');
    const res = await ask(CHECK_SHAHKAR_PATH, { ...body, requestHandlingType: 'advanced' });
    expect(res.status).toBe(200);
    expect(scripted.attemptLog.slice(-2).map((a) => [a.supplier, a.outcome])).toEqual([
      ['primary', 'error'],
      ['secondary', 'success'],
    ]);
    expect(scripted.credit).toBe(1_000_000 - 120);
  });

  it('a simulator without inputOutcomes answers the same inputs as any other', async () => {
    const res = await inquire(
      CHECK_SHAHKAR_PATH,
      { nationalCode: '0499370902', mobileNumber: '09121234567' },
      await accessToken(),
    );
    expect({ status: res.status, data: res.data.data }).toEqual({ status: 200, data: { isMatch: true } });
  });
});

describe('UpstreamSimulator: faults, latency and events', () => {
  let token: string;
  beforeEach(async () => {
    token = await accessToken();
  });

  it('http500: 500 code 1 ServerError without processing, for `times` requests only', async () => {
    sim.injectFault({ kind: 'http500', path: CHECK_SHAHKAR_PATH, times: 2 });
    const trackId = randomUUID();
    const first = await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    expectError(first, 500, 1, 'ServerError', 'Internal server error');
    expect(first.data.meta.trackId).toBe(trackId);
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).status).toBe(500);
    expect(sim.attemptLog).toHaveLength(0);
    // the trackId was not consumed
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).status).toBe(200);
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.inquiryCalls).toBe(3);
  });

  it('a fault restricted to a path leaves other paths alone; GetToken faults count as failed', async () => {
    sim.injectFault({ kind: 'http500', path: IBAN_INQUIRY_PATH });
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token)).status).toBe(200);
    expect((await inquire(IBAN_INQUIRY_PATH, { iban: IBAN }, token)).status).toBe(500);
    sim.injectFault({ kind: 'http500' });
    expectError(await getToken(), 500, 1, 'ServerError');
    expect(sim.tokenCalls).toEqual({ credentials: 2, refresh: 0, failed: 1 });
    expect(sim.issuedAccessTokens).toBe(1);
  });

  it('clearFaults drops the faults not yet taken', async () => {
    sim.injectFault({ kind: 'http500', path: CHECK_SHAHKAR_PATH, times: 2 });
    sim.clearFaults();
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token)).status).toBe(200);
    expect(sim.snapshot().pendingFaults).toEqual([]);
  });

  it('drop: the socket is destroyed without processing or answering', async () => {
    sim.injectFault({ kind: 'drop' });
    const trackId = randomUUID();
    const events: InquiryEvent[] = [];
    sim.on('inquiry', (e) => events.push(e));
    await expect(inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).rejects.toMatchObject({
      code: expect.stringMatching(/ECONNRESET|ERR_BAD_RESPONSE|ECONNABORTED/),
    });
    sim.removeAllListeners('inquiry');
    expect(events).toEqual([{ path: CHECK_SHAHKAR_PATH, trackId, status: 0, code: null, fault: 'drop' }]);
    expect(sim.attemptLog).toHaveLength(0);
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).status).toBe(200);
  });

  it('malformed: HTTP 200 with a body that is not JSON, without processing', async () => {
    sim.injectFault({ kind: 'malformed' });
    const res = await http.post<string>(CHECK_SHAHKAR_PATH, SHAHKAR, {
      headers: { Authorization: `Bearer ${token}` },
      responseType: 'text',
      transformResponse: (x: unknown) => x,
    });
    expect(res.status).toBe(200);
    expect(typeof res.data).toBe('string');
    expect(() => {
      JSON.parse(res.data);
    }).toThrow(SyntaxError);
    expect(res.headers['x-track-id']).toMatch(UUID_V4);
    expect(sim.attemptLog).toHaveLength(0);
    expect(sim.credit).toBe(1_000_000);
  });

  it('hang: never answers and does nothing; the caller gives up', async () => {
    sim.injectFault({ kind: 'hang' });
    const trackId = randomUUID();
    const controller = new AbortController();
    const decided = once(sim, 'inquiry') as Promise<[InquiryEvent]>;
    const pending = http
      .post(
        CHECK_SHAHKAR_PATH,
        { ...SHAHKAR, trackId },
        { headers: { Authorization: `Bearer ${token}` }, signal: controller.signal },
      )
      .then(
        () => 'answered',
        (e: unknown) => e,
      );
    const [event] = await decided;
    expect(event).toEqual({ path: CHECK_SHAHKAR_PATH, trackId, status: 0, code: null, fault: 'hang' });
    expect(sim.attemptLog).toHaveLength(0);
    expect(sim.chargeCount(trackId)).toBe(0);
    // still unanswered while other requests are served
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token)).status).toBe(200);
    expect(await Promise.race([pending, Promise.resolve('still pending')])).toBe('still pending');
    controller.abort();
    expect(axios.isCancel(await pending)).toBe(true);
    // not consumed: the same trackId is accepted afterwards
    expect((await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token)).status).toBe(200);
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('hang-after-processing: processed and charged, then never answered (outcome unknown)', async () => {
    sim.injectFault({ kind: 'hang-after-processing', path: CHECK_SHAHKAR_PATH });
    const trackId = randomUUID();
    const controller = new AbortController();
    const decided = once(sim, 'inquiry') as Promise<[InquiryEvent]>;
    const pending = http
      .post(
        CHECK_SHAHKAR_PATH,
        { ...SHAHKAR, trackId },
        { headers: { Authorization: `Bearer ${token}` }, signal: controller.signal },
      )
      .catch((e: unknown) => e);
    const [event] = await decided;
    expect(event).toEqual({ path: CHECK_SHAHKAR_PATH, trackId, status: 200, code: 0, fault: 'hang-after-processing' });
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.credit).toBe(1_000_000 - 100);
    controller.abort();
    expect(axios.isCancel(await pending)).toBe(true);
    // a retry with the same trackId is rejected as duplicate and not charged again
    expectError(await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token), 409, 5, 'LogicError');
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('latency is applied after processing: a caller that times out may still be charged', async () => {
    sim.setLatency(5_000);
    const trackId = randomUUID();
    const err = await http
      .post(
        CHECK_SHAHKAR_PATH,
        { ...SHAHKAR, trackId },
        { headers: { Authorization: `Bearer ${token}` }, timeout: 100 },
      )
      .catch((e: unknown) => e);
    expect(axios.isAxiosError(err) && err.code).toBe('ECONNABORTED');
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.latencyMs).toBe(5_000);
  });

  it("emits 'token' and 'inquiry' events after answering", async () => {
    const tokens: TokenEvent[] = [];
    const inquiries: InquiryEvent[] = [];
    sim.on('token', (e) => tokens.push(e));
    sim.on('inquiry', (e) => inquiries.push(e));
    try {
      await getToken({ ...CREDENTIALS, password: 'x' });
      await getToken({ refreshToken: 'x' });
      const trackId = randomUUID();
      await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
      await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
      expect(tokens).toEqual([
        { variant: 'credentials', ok: false, status: 401 },
        { variant: 'refresh', ok: false, status: 401 },
      ]);
      expect(inquiries).toEqual([
        { path: CHECK_SHAHKAR_PATH, trackId, status: 200, code: 0 },
        { path: CHECK_SHAHKAR_PATH, trackId, status: 409, code: 5 },
      ]);
    } finally {
      sim.removeAllListeners('token');
      sim.removeAllListeners('inquiry');
    }
  });

  it('reset() restores the constructor state', async () => {
    sim.setCredit(5);
    sim.setPassword(null);
    sim.setLatency(10);
    sim.injectFault({ kind: 'http500', times: 5 });
    sim.setSupplierFailure('primary', 'error');
    sim.reset();
    expect(sim.credit).toBe(1_000_000);
    expect(sim.tokenCalls).toEqual({ credentials: 0, refresh: 0, failed: 0 });
    expect(sim.issuedAccessTokens).toBe(0);
    expect(sim.inquiryCalls).toBe(0);
    expect(sim.requests).toHaveLength(0);
    expect(sim.latencyMs).toBe(0);
    // old tokens are gone, faults and failures cleared
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, token), 401, 6, 'UnAuthorized');
    expect((await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, await accessToken())).status).toBe(200);
  });
});

describe('UpstreamSimulator: /__simulator control surface', () => {
  it('GET state reports counters, credit and charges', async () => {
    const token = await accessToken();
    const trackId = randomUUID();
    await inquire(CHECK_SHAHKAR_PATH, { ...SHAHKAR, trackId }, token);
    const state = (await http.get('/__simulator/state')).data as Record<string, unknown>;
    expect(state).toMatchObject({
      credit: 1_000_000 - 100,
      tokenCalls: { credentials: 1, refresh: 0, failed: 0 },
      inquiryCalls: 1,
      issuedAccessTokens: 1,
      rejectedExpiredTokens: 0,
      charges: { [trackId]: 1 },
      attemptLog: [{ trackId, supplier: 'primary', outcome: 'success' }],
      passwordSet: true,
      disabled: false,
    });
  });

  it('credit, password, disable, latency, supplier-failure, fault and reset', async () => {
    const post = (path: string, body: unknown) => http.post(`/__simulator/${path}`, body);
    expect((await post('credit', { credit: 50 })).status).toBe(200);
    expect(sim.credit).toBe(50);

    const pair = (await getToken()).data.data!;
    expect((await post('password', { password: 'p2' })).status).toBe(200);
    expectError(await getToken({ refreshToken: pair.refreshToken }), 401, 6, 'UnAuthorized');
    expect((await getToken({ username: 'sandbox-user', password: 'p2' })).status).toBe(200);
    await post('password', { password: null });
    expectError(
      await getToken({ username: 'sandbox-user', password: 'p2' }),
      401,
      6,
      'UnAuthorized',
      'Api password has not been set',
    );

    await post('disable', { disabled: true });
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken), 403, 9, 'Inaccessible');
    await post('disable', { disabled: false });

    await post('credit', { credit: 1000 });
    await post('supplier-failure', { name: 'primary', failure: 'timeout' });
    expectError(await inquire(CHECK_SHAHKAR_PATH, SHAHKAR, pair.accessToken), 504, 14, 'RequestTimeOut');
    await post('supplier-failure', { name: 'primary', failure: null });

    await post('latency', { ms: 3 });
    expect(sim.latencyMs).toBe(3);
    await post('latency', { ms: 0 });
    await post('supplier-latency', { ms: 7 });
    expect(sim.supplierLatencyMs).toBe(7);
    await post('supplier-latency', { ms: 0 });

    expect((await post('fault', { kind: 'http500', path: IBAN_INQUIRY_PATH, times: 1 })).status).toBe(200);
    // control endpoints are never affected by faults
    expect((await http.get('/__simulator/state')).status).toBe(200);
    expect((await inquire(IBAN_INQUIRY_PATH, { iban: IBAN }, pair.accessToken)).status).toBe(500);
    expect((await inquire(IBAN_INQUIRY_PATH, { iban: IBAN }, pair.accessToken)).status).toBe(200);

    expect((await post('reset', {})).status).toBe(200);
    expect(sim.credit).toBe(1_000_000);
    expect(sim.tokenCalls).toEqual({ credentials: 0, refresh: 0, failed: 0 });
    expect((await getToken()).status).toBe(200);
  });

  it('rejects bad control input with 400', async () => {
    expect((await http.post('/__simulator/credit', { credit: 'lots' })).status).toBe(400);
    expect((await http.post('/__simulator/fault', { kind: 'explode' })).status).toBe(400);
    expect((await http.post('/__simulator/supplier-failure', { name: 'primary', failure: 'slow' })).status).toBe(400);
    expect((await http.post('/__simulator/latency', { ms: -1 })).status).toBe(400);
    expect((await http.post('/__simulator/supplier-latency', { ms: 'slow' })).status).toBe(400);
    expect((await http.get('/__simulator/nope')).status).toBe(404);
    expect(sim.credit).toBe(1_000_000);
  });
});

describe('UpstreamSimulator: lifecycle', () => {
  it('stop() closes promptly even with hanging and keep-alive requests; start() works again', async () => {
    const own = new UpstreamSimulator();
    const url = await own.start();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(own.baseUrl).toBe(url);
    const login = await axios.post<Envelope<TokenData>>(`${url}${GET_TOKEN_PATH}`, CREDENTIALS);
    own.injectFault({ kind: 'hang' });
    const decided = once(own, 'inquiry');
    const pending = axios
      .post(`${url}${CHECK_SHAHKAR_PATH}`, SHAHKAR, {
        headers: { Authorization: `Bearer ${login.data.data!.accessToken}` },
      })
      .catch((e: unknown) => e);
    await decided;
    await own.stop();
    expect(axios.isAxiosError(await pending)).toBe(true);
    expect(() => own.baseUrl).toThrow('not started');
    const again = await own.start();
    expect((await axios.post(`${again}${GET_TOKEN_PATH}`, CREDENTIALS)).status).toBe(200);
    await own.stop();
  });

  it('main.ts starts from the environment without exposing the password', async () => {
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const { runSimulator } = await import('./main.js');
      expect(log).not.toHaveBeenCalled(); // importing has no side effects
      const running = await runSimulator({
        SIMULATOR_PORT: '0',
        SIMULATOR_USERNAME: 'u1',
        SIMULATOR_PASSWORD: 'very-secret',
      });
      try {
        expect(log).toHaveBeenCalledTimes(1);
        const line = String(log.mock.calls[0][0]);
        expect(line).toContain(running.baseUrl);
        expect(line).not.toContain('very-secret');
        const res = await axios.post<Envelope<TokenData>>(`${running.baseUrl}${GET_TOKEN_PATH}`, {
          username: 'u1',
          password: 'very-secret',
        });
        expect(res.status).toBe(200);
      } finally {
        await running.stop();
      }
    } finally {
      log.mockRestore();
    }
  });
});
