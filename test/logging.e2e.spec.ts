/**
 * Log and metric hygiene end to end (docs/api.md §1, §3): a gateway with the real
 * JsonLogger at LOG_LEVEL trace, driven through token acquisition, successful inquiries,
 * validation errors, an upstream 500 and rejected upstream credentials. Every log line must
 * be JSON, and no log line nor /metrics may carry a credential, a token, the raw API key,
 * a raw personal identifier in any digit form, or a stack trace.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway } from '../src/bootstrap.js';
import { JsonLogger } from '../src/observability/json-logger.js';
import { TokenProvider } from '../src/token/token.provider.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_API_KEYS, TEST_CLIENTS, callGateway, type Exchange } from './support/gateway.js';
import { NATIONAL_CODE, MOBILE, IBAN } from './support/fixtures.js';

const USERNAME = 'log-user-5c1d8e';
const PASSWORD = 'log-pass-X9k2q7Zr';
const API_KEY = TEST_CLIENTS.full.key;

const IBAN_2 = 'IR050170000000123456789012';

const persian = (s: string) => s.replace(/\d/g, (d) => String.fromCharCode(0x06f0 + Number(d)));
const arabic = (s: string) => s.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d)));
const spaced = (iban: string) => iban.replace(/(.{4})(?=.)/g, '$1 ');

/** Every form in which an identifier was sent or could be echoed: ASCII, Persian, Arabic, normalised variants. */
function digitForms(...values: string[]): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    for (const form of [value, persian(value), arabic(value)]) forms.add(form);
  }
  return [...forms];
}

const PERSONAL = digitForms(
  NATIONAL_CODE,
  MOBILE,
  '9121234567', // mobile without the leading 0 (also the core of +989… / 989…)
  '989121234567',
  IBAN,
  IBAN.slice(2), // the 24 digits behind IR
  spaced(IBAN),
  IBAN_2,
  IBAN_2.slice(2),
  spaced(IBAN_2),
);

/** Collects everything pino writes, as lines. */
class LineCollector extends Writable {
  private buffer = '';
  readonly lines: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.buffer += chunk.toString();
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      this.lines.push(this.buffer.slice(0, newline));
      this.buffer = this.buffer.slice(newline + 1);
    }
    callback();
  }

  /** Lines still being written when the test ends (no trailing newline yet) count too. */
  all(): string[] {
    return this.buffer === '' ? [...this.lines] : [...this.lines, this.buffer];
  }
}

interface LoggedGateway {
  app: NestFastifyApplication;
  url: string;
  tokens: TokenProvider;
}

/** Like support/gateway.ts startGateway, but with a real JsonLogger instead of `logger: false`. */
async function startLoggedGateway(env: Record<string, string>, logger: JsonLogger): Promise<LoggedGateway> {
  const { app } = await createGateway(
    {
      API_KEYS: TEST_API_KEYS,
      LOG_LEVEL: 'trace',
      // The run's PostgreSQL (support/ledger-postgres.js), else PGlite in memory.
      LEDGER_DATABASE_URL: process.env.VGW_TEST_LEDGER_DATABASE_URL,
      LEDGER_DATA_DIR: 'memory://',
      ...env,
    },
    { logger },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}`, tokens: app.get(TokenProvider) };
}

describe('logs and metrics never carry secrets or personal data', () => {
  const collector = new LineCollector();
  let sim: UpstreamSimulator;
  let gateway: LoggedGateway;
  let issued: readonly string[];
  const learnedTokens = new Set<string>();
  const exchanges: Record<string, Exchange> = {};
  let metricsText = '';

  const post = (path: string, json: unknown, apiKey: string = API_KEY) =>
    callGateway(gateway.url, 'POST', path, { apiKey, json });

  beforeAll(async () => {
    sim = new UpstreamSimulator({ username: USERNAME, password: PASSWORD });
    // The simulator keeps its tokens private: record every pair it issues from the start.
    issued = sim.issuedTokenValues;
    await sim.start();
    gateway = await startLoggedGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        UPSTREAM_USERNAME: USERNAME,
        UPSTREAM_PASSWORD: PASSWORD,
        UPSTREAM_TIMEOUT_MS: '2000',
      },
      new JsonLogger('trace', collector),
    );

    // 1. Token acquisition.
    learnedTokens.add(await gateway.tokens.getAccessToken());

    // 2. Successful inquiries, ASCII and Persian/Arabic digits, every mobile form, spaced IBANs.
    exchanges.shahkar = await post('/v1/kyc/shahkar', { nationalCode: NATIONAL_CODE, mobileNumber: MOBILE });
    exchanges.shahkarPersian = await post('/v1/kyc/shahkar', {
      nationalCode: persian(NATIONAL_CODE),
      mobileNumber: `+${persian('989121234567')}`,
    });
    exchanges.shahkarArabic = await post('/v1/kyc/shahkar', {
      nationalCode: arabic(NATIONAL_CODE),
      mobileNumber: '9121234567',
    });
    exchanges.iban = await post('/v1/kyc/iban', { iban: IBAN });
    exchanges.ibanPersian = await post('/v1/kyc/iban', { iban: `IR${persian(IBAN.slice(2))}` });
    exchanges.ibanSpaced = await post('/v1/kyc/iban', { iban: spaced(IBAN_2).toLowerCase() });
    exchanges.read = await callGateway(gateway.url, 'GET', `/v1/inquiries/${String(exchanges.iban.body.trackId)}`, {
      apiKey: API_KEY,
    });

    // 3. Validation errors (bad check digit, bad mobile, bad IBAN, unknown field, not JSON).
    exchanges.invalidShahkar = await post('/v1/kyc/shahkar', {
      nationalCode: '0499370898',
      mobileNumber: '0812123456',
      extra: NATIONAL_CODE,
    });
    exchanges.invalidIban = await post('/v1/kyc/iban', { iban: `${IBAN.slice(0, -1)}3` });
    exchanges.notJson = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: API_KEY,
      raw: `{"nationalCode":"${NATIONAL_CODE}",`,
    });
    // Callers without a valid key, and an unknown route carrying an identifier.
    exchanges.badKey = await post(
      '/v1/kyc/shahkar',
      { nationalCode: NATIONAL_CODE, mobileNumber: MOBILE },
      `${API_KEY}-wrong`,
    );
    exchanges.noKey = await callGateway(gateway.url, 'POST', '/v1/kyc/iban', { json: { iban: IBAN } });
    exchanges.notFound = await callGateway(gateway.url, 'GET', `/v1/kyc/${NATIONAL_CODE}`, { apiKey: API_KEY });

    // 4. An upstream 500.
    sim.injectFault({ kind: 'http500' });
    exchanges.upstream500 = await post('/v1/kyc/iban', { iban: IBAN });
    // And a malformed upstream answer.
    sim.injectFault({ kind: 'malformed' });
    exchanges.upstreamMalformed = await post('/v1/kyc/shahkar', { nationalCode: NATIONAL_CODE, mobileNumber: MOBILE });

    // 4b. A hostile upstream: its validation messages echo the token and the credentials.
    sim.setFieldValidator((_path, _body, authorization) => {
      sim.setFieldValidator(() => []);
      const token = (authorization ?? '').replace(/^Bearer\s+/i, '');
      return [{ field: 'nationalCode', message: `token ${token} of ${USERNAME}/${PASSWORD} is not allowed here` }];
    });
    exchanges.hostileRejection = await post('/v1/kyc/shahkar', { nationalCode: NATIONAL_CODE, mobileNumber: MOBILE });

    // 5. Wrong credentials at the upstream: the password changes (refresh tokens die with it)
    //    and the access token expires, so the next inquiry forces a renewal that is refused.
    //    The upstream echoes the credentials it was sent ("Login failed for user X with password Y").
    sim.setEchoSecrets(true);
    sim.setPassword('x');
    sim.expireAllAccessTokens();
    exchanges.credentialsRejected = await post('/v1/kyc/shahkar', {
      nationalCode: NATIONAL_CODE,
      mobileNumber: MOBILE,
    });

    for (const request of sim.requests) {
      const match = /^Bearer\s+(\S+)$/i.exec(request.authorization ?? '');
      if (match) learnedTokens.add(match[1]);
    }
    for (const token of issued) learnedTokens.add(token);

    metricsText = (await callGateway(gateway.url, 'GET', '/metrics')).text;
    // Give asynchronous log writes (background renewals) a moment to land.
    await new Promise((resolve) => setTimeout(resolve, 100));
  });

  afterAll(async () => {
    await gateway?.app.close();
    await sim?.stop();
  });

  /** Secrets and personal data that must appear nowhere. */
  const forbidden = (): Array<[string, string]> => [
    ['upstream password', PASSWORD],
    ['upstream username', USERNAME],
    ['raw API key', API_KEY],
    ...[...learnedTokens].map((t): [string, string] => ['upstream token', t]),
    ...PERSONAL.map((p): [string, string] => ['personal identifier', p]),
  ];

  it('drove every scenario as intended', () => {
    const statuses = Object.fromEntries(Object.entries(exchanges).map(([name, e]) => [name, e.status]));
    expect(statuses).toEqual({
      shahkar: 200,
      shahkarPersian: 200,
      shahkarArabic: 200,
      iban: 200,
      ibanPersian: 200,
      ibanSpaced: 200,
      read: 200,
      invalidShahkar: 400,
      invalidIban: 400,
      notJson: 400,
      badKey: 401,
      noKey: 401,
      notFound: 404,
      upstream500: 502,
      upstreamMalformed: 502,
      hostileRejection: 422,
      credentialsRejected: 503,
    });
    // The hostile upstream did echo the secrets, in both places.
    expect(exchanges.hostileRejection.body).toMatchObject({
      code: 'upstream_rejected',
      errors: [{ field: 'nationalCode', message: expect.stringContaining('[redacted]') }],
    });
    // Two token pairs at least were issued (the first and the refresh), and the renewal was refused.
    expect(issued.length).toBeGreaterThanOrEqual(2);
    expect(learnedTokens.size).toBeGreaterThanOrEqual(2);
    expect(sim.tokenCalls.failed).toBeGreaterThanOrEqual(1);
  });

  it('the secrets list is meaningful: tokens and identifiers did reach the upstream', () => {
    const sent = JSON.stringify(sim.requests);
    expect(sent).toContain(NATIONAL_CODE);
    expect(sent).toContain(MOBILE);
    expect(sent).toContain(IBAN);
    expect(sim.requests.some((r) => r.authorization !== undefined)).toBe(true);
  });

  it('wrote log lines at every level the scenarios produce', () => {
    const lines = collector.all();
    expect(lines.length).toBeGreaterThan(10);
    const levels = new Set(lines.map((line) => (JSON.parse(line) as { level: string }).level));
    for (const level of ['debug', 'info', 'warn', 'error']) expect(levels.has(level)).toBe(true);
  });

  it('every log line is a JSON object with level, time, msg and the service name', () => {
    for (const line of collector.all()) {
      let parsed: unknown;
      expect(() => {
        parsed = JSON.parse(line);
      }).not.toThrow();
      expect(parsed).toMatchObject({
        level: expect.stringMatching(/^(trace|debug|info|warn|error|fatal)$/),
        time: expect.any(String),
        msg: expect.any(String),
        service: 'verification-gateway',
      });
    }
  });

  it('no log line carries a credential, a token, the raw API key or a raw personal identifier', () => {
    const lines = collector.all();
    const leaks: string[] = [];
    for (const line of lines) {
      // Both the raw line and its decoded values (a JSON escape such as \u06f0 would hide Persian digits).
      const text = `${line}\n${Object.values(JSON.parse(line) as Record<string, unknown>).join(' ')}`;
      for (const [what, value] of forbidden()) if (text.includes(value)) leaks.push(`${what} in: ${line}`);
    }
    expect(leaks).toEqual([]);
  });

  it('no log line carries a stack trace', () => {
    for (const line of collector.all()) {
      const values = Object.values(JSON.parse(line) as Record<string, unknown>).map(String);
      expect(line).not.toContain('\\n    at ');
      for (const value of values) {
        expect(value).not.toContain('\n    at ');
        expect(value).not.toMatch(/\bat .+\.(ts|js):\d+:\d+/);
      }
    }
  });

  it('logs the failures by trackId, readable (not masked)', () => {
    const text = collector.all().join('\n');
    const trackId = exchanges.upstream500.headers.get('x-track-id');
    expect(trackId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(text).toContain(trackId);
    // The refused renewal is logged, by reason, without the credentials.
    expect(text).toMatch(/credentials_rejected/);
  });

  it('GET /metrics carries none of them either', () => {
    expect(metricsText).toContain('vgw_');
    const leaks = forbidden()
      .filter(([, value]) => metricsText.includes(value))
      .map(([what]) => what);
    expect(leaks).toEqual([]);
    expect(metricsText).not.toContain('\n    at ');
  });

  it('no response or header carries a credential or token either', () => {
    const secrets = [PASSWORD, USERNAME, ...learnedTokens];
    for (const [name, exchange] of Object.entries(exchanges)) {
      const headers = JSON.stringify([...exchange.headers.entries()]);
      for (const secret of secrets) {
        expect(`${name}: ${exchange.text}`).not.toContain(secret);
        expect(`${name}: ${headers}`).not.toContain(secret);
      }
    }
  });
});
