/**
 * End to end, over real HTTP against the upstream simulator and a real Redis:
 * input validation and normalisation, caller authentication and scopes, routing, body
 * limits, the stamped trackId and the inquiry record (docs/api.md §1–§3).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { MESSAGES } from '../src/inquiry/validation/decorators.js';
import {
  callGateway,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type CallOptions,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { expectEveryChargeTraceable, expectNoSecretInExchanges, expectProblemShape } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import { CHECK_SHAHKAR_PATH, IBAN_INQUIRY_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import {
  UUID_V4,
  ISO_8601,
  UPSTREAM_PASSWORD,
  UPSTREAM_USERNAME,
  NATIONAL_CODE,
  MOBILE,
  IBAN,
  SHAHKAR,
} from './support/fixtures.js';

/** Every personal value this file sends: none may appear in an error body. */
const PERSONAL_VALUES = [
  NATIONAL_CODE,
  '۰۴۹۹۳۷۰۸۹۹',
  '٠٤٩٩٣٧٠٨٩٩',
  '0499370898',
  '1111111111',
  MOBILE,
  '9121234567',
  '08121234567',
  IBAN,
  '820540102680020817909002',
  'IR820540102680020817909003',
  'IR050170000000123456789012',
];

let redis: RedisServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let issuedTokens: readonly string[];
const exchanges: Exchange[] = [];

async function call(method: string, path: string, options: CallOptions = {}): Promise<Exchange> {
  const exchange = await callGateway(gateway.url, method, path, options);
  exchanges.push(exchange);
  return exchange;
}

const shahkar = (json: unknown, options: CallOptions = {}) =>
  call('POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json, ...options });
const iban = (json: unknown, options: CallOptions = {}) =>
  call('POST', '/v1/kyc/iban', { apiKey: TEST_CLIENTS.full.key, json, ...options });
const record = (trackId: string, apiKey: string = TEST_CLIENTS.full.key) =>
  call('GET', `/v1/inquiries/${trackId}`, { apiKey });

/** RFC 9457 shape of docs/api.md §3; `stamped` says whether a trackId must be present. */
function expectProblem(res: Exchange, status: number, code: string, stamped: boolean): void {
  expectProblemShape(res, status, code);
  if (stamped) {
    expect(res.body.trackId).toMatch(UUID_V4);
    expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
  } else {
    expect(res.body).not.toHaveProperty('trackId');
    expect(res.headers.get('x-track-id')).toBeNull();
  }
  for (const value of PERSONAL_VALUES) expect(res.text).not.toContain(value);
}

function expectValidation(res: Exchange, errors: Array<{ field: string; message: string }>): void {
  expectProblem(res, 400, 'validation_failed', false);
  expect(res.body.errors).toEqual(errors);
}

/** The request the simulator recorded for `trackId`: exactly one. */
function upstreamRequestFor(trackId: string) {
  const seen = sim.requests.filter((r) => r.trackId === trackId);
  expect(seen).toHaveLength(1);
  return seen[0];
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start(0);
  issuedTokens = sim.issuedTokenValues;
  gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '5000' });
  await untilStoreReady(gateway);
});

afterAll(async () => {
  await gateway?.close();
  await sim?.stop();
  await redis?.stop();
});

describe('400 validation_failed: nothing reaches the upstream', () => {
  let callsBefore: number;
  beforeEach(() => {
    callsBefore = sim.inquiryCalls;
  });
  const nothingSent = () => expect(sim.inquiryCalls).toBe(callsBefore);

  it('rejects a body that is not valid JSON', async () => {
    const res = await call('POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      raw: '{"nationalCode": "0499370899",',
    });
    expectValidation(res, [{ field: 'body', message: 'The body is not valid JSON.' }]);
    nothingSent();
  });

  it('rejects a body sent as text/plain', async () => {
    const res = await call('POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      raw: 'nationalCode=0499370899',
      contentType: 'text/plain',
    });
    expectProblem(res, 400, 'validation_failed', false);
    expect(res.body.errors).toEqual([{ field: 'body', message: 'Content-Type must be application/json.' }]);
    nothingSent();
  });

  it('rejects an empty JSON body', async () => {
    const res = await call('POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, raw: '' });
    expectProblem(res, 400, 'validation_failed', false);
    expect(res.body.errors).toEqual([{ field: 'body', message: expect.any(String) }]);
    nothingSent();
  });

  it.each([
    ['an array', '[{"nationalCode":"0499370899","mobileNumber":"09121234567"}]'],
    ['a string', '"0499370899"'],
    ['a number', '42'],
    ['null', 'null'],
  ])('rejects a body that is %s, not an object', async (_name, raw) => {
    const res = await call('POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, raw });
    expectValidation(res, [{ field: 'body', message: 'must be a JSON object' }]);
    nothingSent();
  });

  it('rejects an unknown field, one entry for it alone', async () => {
    const res = await shahkar({ ...SHAHKAR, callbackUrl: 'https://example.com' });
    expectValidation(res, [{ field: 'callbackUrl', message: MESSAGES.unknownField }]);
    nothingSent();
  });

  it('rejects a trackId sent by the caller: the gateway stamps it', async () => {
    const res = await shahkar({ ...SHAHKAR, trackId: '6f1c1d4e-3a2b-4c5d-8e9f-0a1b2c3d4e5f' });
    expectValidation(res, [{ field: 'trackId', message: MESSAGES.trackId }]);
    nothingSent();
  });

  it('reports every missing field, one entry each', async () => {
    expectValidation(await shahkar({}), [
      { field: 'nationalCode', message: MESSAGES.required },
      { field: 'mobileNumber', message: MESSAGES.required },
    ]);
    expectValidation(await iban({}), [{ field: 'iban', message: MESSAGES.required }]);
    nothingSent();
  });

  it('reports a number sent instead of a string (no implicit conversion)', async () => {
    expectValidation(await shahkar({ nationalCode: 499370899, mobileNumber: MOBILE }), [
      { field: 'nationalCode', message: MESSAGES.notString },
    ]);
    expectValidation(await shahkar({ nationalCode: NATIONAL_CODE, mobileNumber: 9121234567 }), [
      { field: 'mobileNumber', message: MESSAGES.notString },
    ]);
    nothingSent();
  });

  it('reports every bad field of one body, each once', async () => {
    const res = await shahkar({
      nationalCode: '0499370898',
      mobileNumber: '08121234567',
      requestHandlingType: 'fast',
      extra: true,
    });
    expectProblem(res, 400, 'validation_failed', false);
    const errors = res.body.errors as Array<{ field: string; message: string }>;
    expect([...errors].sort((a, b) => a.field.localeCompare(b.field))).toEqual([
      { field: 'extra', message: MESSAGES.unknownField },
      { field: 'mobileNumber', message: MESSAGES.mobile },
      { field: 'nationalCode', message: MESSAGES.nationalCode },
      { field: 'requestHandlingType', message: MESSAGES.requestHandlingType },
    ]);
    nothingSent();
  });

  it.each([
    ['wrong check digit', '0499370898'],
    ['repeated digits', '1111111111'],
    ['nine digits', '499370899'],
    ['eleven digits', '04993708990'],
    ['letters', '04993708a9'],
    ['inner space', '04993 70899'],
    ['empty', ''],
    ['Persian digits, wrong check digit', '۰۴۹۹۳۷۰۸۹۸'],
  ])('rejects the national code (%s)', async (_name, nationalCode) => {
    expectValidation(await shahkar({ nationalCode, mobileNumber: MOBILE }), [
      { field: 'nationalCode', message: MESSAGES.nationalCode },
    ]);
    nothingSent();
  });

  it.each([
    ['08… prefix', '08121234567'],
    ['ten digits after 0', '091212345678'],
    ['too short', '0912123456'],
    ['+98 with a short number', '+98912123456'],
    ['+98 then 0', '+9809121234567'],
    ['a leading dash', '-09121234567'],
    ['dots', '0912.123.4567'],
    ['landline', '02112345678'],
    ['letters', '0912abc4567'],
    ['empty', ''],
  ])('rejects the mobile number (%s)', async (_name, mobileNumber) => {
    expectValidation(await shahkar({ nationalCode: NATIONAL_CODE, mobileNumber }), [
      { field: 'mobileNumber', message: MESSAGES.mobile },
    ]);
    nothingSent();
  });

  it.each([
    ['wrong checksum', 'IR820540102680020817909003'],
    ['23 digits', 'IR82054010268002081790900'],
    ['25 digits', 'IR8205401026800208179090021'],
    ['a valid German IBAN', 'DE89370400440532013000'],
    ['no country code', '820540102680020817909002'],
    ['dashes', 'IR82-0540-1026-8002-0817-9090-02'],
    ['empty', ''],
  ])('rejects the IBAN (%s)', async (_name, value) => {
    expectValidation(await iban({ iban: value }), [{ field: 'iban', message: MESSAGES.iban }]);
    nothingSent();
  });

  it('says in the IBAN message that spaces are accepted, as they are', async () => {
    expect(MESSAGES.iban).toMatch(/\(spaces and lower case allowed\)$/);
    expect((await iban({ iban: 'ir82 0540 1026 8002 0817 9090 02' })).status).toBe(200);
  });

  it.each([['fast'], ['Advanced'], ['STANDARD'], [''], [null], [1]])(
    'rejects requestHandlingType %p',
    async (requestHandlingType) => {
      expectValidation(await shahkar({ ...SHAHKAR, requestHandlingType }), [
        { field: 'requestHandlingType', message: MESSAGES.requestHandlingType },
      ]);
      expectValidation(await iban({ iban: IBAN, requestHandlingType }), [
        { field: 'requestHandlingType', message: MESSAGES.requestHandlingType },
      ]);
      nothingSent();
    },
  );

  it.each([
    ['with a space', 'key one'],
    ['too long (256 characters)', 'k'.repeat(256)],
    ['non-ASCII', 'clé-1'],
    ['empty', ''],
  ])('rejects an Idempotency-Key %s', async (_name, key) => {
    const res = await shahkar(SHAHKAR, { headers: { 'idempotency-key': key } });
    expectValidation(res, [
      { field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters (0x21-0x7E)' },
    ]);
    nothingSent();
  });

  it('checks credentials before the body: no credential and a bad body is 401, not 400', async () => {
    const res = await call('POST', '/v1/kyc/shahkar', { json: { nationalCode: 'x' } });
    expectProblem(res, 401, 'unauthenticated', false);
    nothingSent();
  });
});

describe('401 unauthenticated, 403 forbidden, 404 not_found, 413 payload_too_large', () => {
  let callsBefore: number;
  beforeEach(() => {
    callsBefore = sim.inquiryCalls;
  });

  it.each([
    ['no credential', {}],
    ['a wrong API key', { 'x-api-key': 'key-full-0123456788' }],
    ['an empty API key', { 'x-api-key': '' }],
    ['a Bearer token while no JWT is configured', { authorization: 'Bearer abc.def.ghi' }],
  ])('answers 401 for %s on every inquiry endpoint, with its WWW-Authenticate challenge', async (_name, headers) => {
    const answers = [
      await call('POST', '/v1/kyc/shahkar', { json: SHAHKAR, headers }),
      await call('POST', '/v1/kyc/iban', { json: { iban: IBAN }, headers }),
      await call('GET', '/v1/inquiries/6f1c1d4e-3a2b-4c5d-8e9f-0a1b2c3d4e5f', { headers }),
    ];
    for (const res of answers) {
      expectProblem(res, 401, 'unauthenticated', false);
      // RFC 9110 §11.6.1: every 401 names a scheme; no JWT is configured here, so API keys only.
      expect(res.headers.get('www-authenticate')).toBe('ApiKey realm="verification-gateway", header="X-Api-Key"');
    }
    expect(sim.inquiryCalls).toBe(callsBefore);
  });

  it('answers 401 to an API key sent as a bearer token, saying where API keys go', async () => {
    const res = await call('POST', '/v1/kyc/shahkar', {
      json: SHAHKAR,
      headers: { authorization: `Bearer ${TEST_CLIENTS.full.key}` },
    });
    expectProblem(res, 401, 'unauthenticated', false);
    expect(res.body.detail).toBe(
      'A credential is required: X-Api-Key or Authorization: Bearer. ' +
        'An API key goes in the X-Api-Key header, not in Authorization: Bearer.',
    );
  });

  it('answers 403 to a client without the scope', async () => {
    const key = TEST_CLIENTS.none.key;
    expectProblem(await call('POST', '/v1/kyc/shahkar', { apiKey: key, json: SHAHKAR }), 403, 'forbidden', false);
    expectProblem(await call('POST', '/v1/kyc/iban', { apiKey: key, json: { iban: IBAN } }), 403, 'forbidden', false);
    expectProblem(
      await call('GET', '/v1/inquiries/6f1c1d4e-3a2b-4c5d-8e9f-0a1b2c3d4e5f', { apiKey: key }),
      403,
      'forbidden',
      false,
    );
    expect(sim.inquiryCalls).toBe(callsBefore);
  });

  it('answers 403 to `advanced` without kyc:advanced, and sends `advanced` upstream for a client that has it', async () => {
    const basic = TEST_CLIENTS.basic.key;
    expectProblem(
      await shahkar({ ...SHAHKAR, requestHandlingType: 'advanced' }, { apiKey: basic }),
      403,
      'forbidden',
      false,
    );
    expectProblem(
      await iban({ iban: IBAN, requestHandlingType: 'advanced' }, { apiKey: basic }),
      403,
      'forbidden',
      false,
    );
    expect(sim.inquiryCalls).toBe(callsBefore);

    const standard = await shahkar({ ...SHAHKAR, requestHandlingType: 'standard' }, { apiKey: basic });
    expect(standard.status).toBe(200);
    expect(upstreamRequestFor(standard.body.trackId as string).body).toMatchObject({ requestHandlingType: 'standard' });

    const advanced = await iban({ iban: IBAN, requestHandlingType: 'advanced' });
    expect(advanced.status).toBe(200);
    expect(upstreamRequestFor(advanced.body.trackId as string).body).toEqual({
      iban: IBAN,
      requestHandlingType: 'advanced',
      trackId: advanced.body.trackId,
    });
    expect(sim.inquiryCalls).toBe(callsBefore + 2);
  });

  it.each([
    ['GET', '/v1/kyc/unknown', 404, 'not_found'],
    ['POST', '/v1/kyc/passport', 404, 'not_found'],
    ['GET', '/v2/inquiries', 404, 'not_found'],
    // A known path with another method (RFC 9110 §15.5.6).
    ['GET', '/v1/kyc/shahkar', 405, 'method_not_allowed'],
    ['PUT', '/v1/kyc/iban', 405, 'method_not_allowed'],
  ] as Array<[string, string, number, string]>)('answers %s %s with %i %s', async (method, path, status, code) => {
    const res = await call(method, path, {
      apiKey: TEST_CLIENTS.full.key,
      ...(method === 'GET' ? {} : { json: SHAHKAR }),
    });
    expectProblem(res, status, code, false);
    expect(res.headers.get('allow')).toBe(status === 405 ? 'POST' : null);
    expect(sim.inquiryCalls).toBe(callsBefore);
  });

  it('answers 413 to a body over 16 KiB, before anything reaches the upstream', async () => {
    const res = await shahkar({ ...SHAHKAR, padding: 'x'.repeat(16 * 1024) });
    expectProblem(res, 413, 'payload_too_large', false);
    expect(sim.inquiryCalls).toBe(callsBefore);
  });

  it('accepts a body just under the limit as far as validation (the padding is an unknown field)', async () => {
    const json = { ...SHAHKAR, padding: '' };
    json.padding = 'x'.repeat(16 * 1024 - JSON.stringify(json).length);
    expect(JSON.stringify(json).length).toBe(16 * 1024);
    expectValidation(await shahkar(json), [{ field: 'padding', message: MESSAGES.unknownField }]);
  });
});

describe('accepted spellings, normalised before they go upstream', () => {
  it.each([
    ['ASCII', NATIONAL_CODE, MOBILE],
    ['Persian digits', '۰۴۹۹۳۷۰۸۹۹', '۰۹۱۲۱۲۳۴۵۶۷'],
    ['Arabic-Indic digits', '٠٤٩٩٣٧٠٨٩٩', '٠٩١٢١٢٣٤٥٦٧'],
    ['+989… mobile', NATIONAL_CODE, '+989121234567'],
    ['989… mobile', NATIONAL_CODE, '989121234567'],
    ['9… mobile', NATIONAL_CODE, '9121234567'],
    ['00989… mobile', NATIONAL_CODE, '00989121234567'],
    ['a mobile with spaces', NATIONAL_CODE, '0912 123 4567'],
    ['a mobile with dashes, after +98', NATIONAL_CODE, '+98 912-123-4567'],
    ['surrounding spaces', ` ${NATIONAL_CODE} `, ` ${MOBILE} `],
    ['mixed Persian and ASCII digits', '04۹۹37٠899', '+98912۱۲۳۴۵۶۷'],
  ])('Shahkar with %s', async (_name, nationalCode, mobileNumber) => {
    const callsBefore = sim.inquiryCalls;
    const res = await shahkar({ nationalCode, mobileNumber });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ trackId: expect.stringMatching(UUID_V4), status: 'succeeded', data: { isMatch: true } });
    expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
    const upstream = upstreamRequestFor(res.body.trackId as string);
    expect(upstream.path).toBe(CHECK_SHAHKAR_PATH);
    expect(upstream.body).toEqual({
      nationalCode: NATIONAL_CODE,
      mobileNumber: MOBILE,
      requestHandlingType: 'standard',
      trackId: res.body.trackId,
    });
    expect(sim.inquiryCalls).toBe(callsBefore + 1);
    expect(sim.chargeCount(res.body.trackId as string)).toBe(1);
  });

  it.each([
    ['upper case', IBAN, IBAN, 'Parsian Bank'],
    ['lower case, spaced in fours', 'ir82 0540 1026 8002 0817 9090 02', IBAN, 'Parsian Bank'],
    ['mixed case with Persian digits', 'iR۸۲۰۵۴۰۱۰۲۶۸۰۰۲۰۸۱۷۹۰۹۰۰۲', IBAN, 'Parsian Bank'],
    [
      'another bank, Arabic-Indic digits',
      'IR٠٥٠١٧٠٠٠٠٠٠٠١٢٣٤٥٦٧٨٩٠١٢',
      'IR050170000000123456789012',
      'Bank Melli Iran',
    ],
  ])('IBAN in %s', async (_name, value, normalised, bankName) => {
    const res = await iban({ iban: value });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
    expect(res.body).toEqual({
      trackId: expect.stringMatching(UUID_V4),
      status: 'succeeded',
      data: {
        iban: normalised,
        bankName,
        accountStatus: 'ACTIVE',
        owners: [{ firstName: expect.any(String), lastName: expect.any(String) }],
      },
    });
    const upstream = upstreamRequestFor(res.body.trackId as string);
    expect(upstream.path).toBe(IBAN_INQUIRY_PATH);
    expect(upstream.body).toEqual({ iban: normalised, requestHandlingType: 'standard', trackId: res.body.trackId });
  });

  it('passes a non-matching Shahkar answer through verbatim', async () => {
    sim.setShahkarMatcher((nationalCode, mobile) => !(nationalCode === '0013542419' && mobile === '09351234567'));
    try {
      const res = await shahkar({ nationalCode: '0013542419', mobileNumber: '+989351234567' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        trackId: res.headers.get('x-track-id'),
        status: 'succeeded',
        data: { isMatch: false },
      });
    } finally {
      sim.setShahkarMatcher(() => true);
    }
  });

  it('stamps a fresh UUID v4 per request without Idempotency-Key', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => shahkar(SHAHKAR)));
    const trackIds = results.map((r) => r.body.trackId as string);
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    for (const [i, trackId] of trackIds.entries()) {
      expect(trackId).toMatch(UUID_V4);
      expect(results[i].headers.get('x-track-id')).toBe(trackId);
      expect(upstreamRequestFor(trackId).trackId).toBe(trackId);
    }
    expect(new Set(trackIds).size).toBe(10);
  });
});

describe('GET /v1/inquiries/{trackId}', () => {
  it('shows the succeeded record to its client only', async () => {
    const before = Date.now();
    const res = await shahkar(SHAHKAR);
    expect(res.status).toBe(200);
    const trackId = res.body.trackId as string;

    const seen = await record(trackId);
    expect(seen.status).toBe(200);
    expect(seen.headers.get('content-type')).toMatch(/^application\/json/);
    expect(seen.body).toEqual({
      trackId,
      operation: 'shahkar',
      status: 'succeeded',
      requestHandlingType: 'standard',
      createdAt: expect.stringMatching(ISO_8601),
      completedAt: expect.stringMatching(ISO_8601),
      upstream: { code: 0, message: 'Operation completed successfully' },
      data: { isMatch: true },
    });
    const createdAt = Date.parse(seen.body.createdAt as string);
    const completedAt = Date.parse(seen.body.completedAt as string);
    expect(createdAt).toBeGreaterThanOrEqual(before - 5);
    expect(completedAt).toBeGreaterThanOrEqual(createdAt);
    expect(completedAt).toBeLessThanOrEqual(Date.now() + 5);
    // No personal data in the record view.
    expect(seen.text).not.toContain(NATIONAL_CODE);
    expect(seen.text).not.toContain(MOBILE);

    // Upper-case spelling of the same trackId finds it too.
    expect((await record(trackId.toUpperCase())).body).toEqual(seen.body);

    // Another client with inquiries:read: 404, exactly as for an unknown trackId.
    const foreign = await record(trackId, TEST_CLIENTS.other.key);
    expectProblem(foreign, 404, 'not_found', false);
    const unknown = await record('6f1c1d4e-3a2b-4c5d-8e9f-0a1b2c3d4e5f');
    expectProblem(unknown, 404, 'not_found', false);
    expect(foreign.body).toEqual(unknown.body);
  });

  it('shows an IBAN record with the upstream data', async () => {
    const res = await iban({ iban: IBAN, requestHandlingType: 'advanced' });
    expect(res.status).toBe(200);
    const seen = await record(res.body.trackId as string);
    expect(seen.body).toMatchObject({
      trackId: res.body.trackId,
      operation: 'iban',
      status: 'succeeded',
      requestHandlingType: 'advanced',
      data: res.body.data,
    });
  });

  it.each([['not-a-uuid'], ['6f1c1d4e3a2b4c5d8e9f0a1b2c3d4e5f']])(
    'answers 400 validation_failed to the malformed trackId %s, as /admin/ledger does',
    async (trackId) => {
      const res = await record(trackId);
      expectProblem(res, 400, 'validation_failed', false);
      expect(res.body.errors).toEqual([
        { field: 'trackId', message: 'must be a UUID, as in the X-Track-Id of an inquiry answer' },
      ]);
    },
  );

  it('answers 404 to a well-formed trackId no inquiry has', async () => {
    expectProblem(await record('00000000-0000-0000-0000-000000000000'), 404, 'not_found', false);
  });
});

describe('what the responses of this file never carry', () => {
  it('no upstream password, username, access or refresh token in any body or header', () => {
    expect(exchanges.length).toBeGreaterThan(100);
    expect(issuedTokens.length).toBeGreaterThanOrEqual(2);
    const secrets = [UPSTREAM_PASSWORD, UPSTREAM_USERNAME, ...issuedTokens];
    expectNoSecretInExchanges(exchanges, secrets);
  });

  it('every upstream charge was handed to a caller as its trackId', () => {
    expect(sim.chargesByTrackId.size).toBeGreaterThan(20);
    expectEveryChargeTraceable(sim, exchanges);
  });
});
