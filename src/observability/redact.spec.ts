/**
 * The log redactor (docs/api.md §1, §3): personal identifiers and credentials are masked
 * in any log text, ordinary text and trackIds stay readable.
 */
import { describe, expect, it } from '@jest/globals';
import { maskMiddle, redactText } from './redact.js';

/** Persian (۰–۹) and Arabic-Indic (٠–٩) forms of an ASCII digit string. */
const persian = (s: string) => s.replace(/\d/g, (d) => String.fromCharCode(0x06f0 + Number(d)));
const arabic = (s: string) => s.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d)));

const NATIONAL_CODE = '0499370899';
const MOBILE = '09121234567';
const IBAN = 'IR820540102680020817909002';
const IBAN_SPACED = 'IR82 0540 1026 8002 0817 9090 02';

function expectMasked(input: string, ...raw: string[]) {
  const output = redactText(input);
  for (const value of raw) expect(output).not.toContain(value);
  return output;
}

describe('maskMiddle', () => {
  it('keeps two characters at each end of a long value', () => {
    expect(maskMiddle('0499370899')).toBe('04******99');
  });
  it('masks short values entirely', () => {
    expect(maskMiddle('1234')).toBe('****');
    expect(maskMiddle('')).toBe('');
  });
});

describe('redactText: personal identifiers', () => {
  it.each([
    ['national code', `nationalCode ${NATIONAL_CODE} rejected`, NATIONAL_CODE, 'nationalCode 04******99 rejected'],
    ['national code in JSON', `{"nationalCode":"${NATIONAL_CODE}"}`, NATIONAL_CODE, '{"nationalCode":"04******99"}'],
    ['mobile 09…', `mobile ${MOBILE}`, MOBILE, 'mobile 09*******67'],
    ['mobile +989…', 'mobile +989121234567.', '+989121234567', 'mobile +9*********67.'],
    ['mobile 989…', 'mobile 989121234567', '989121234567', 'mobile 98********67'],
    ['mobile 9…', 'mobile 9121234567', '9121234567', 'mobile 91******67'],
  ])('%s', (_label, input, raw, expected) => {
    expect(expectMasked(input, raw)).toBe(expected);
  });

  it('masks an IBAN, upper or lower case', () => {
    expect(expectMasked(`iban ${IBAN} ok`, IBAN, IBAN.slice(2))).toBe(`iban IR${'*'.repeat(22)}02 ok`);
    expect(expectMasked(`iban ${IBAN.toLowerCase()}`, IBAN.slice(2))).not.toMatch(/\d{5}/);
  });

  it('masks a spaced or dashed IBAN, leaving no group of its digits readable in sequence', () => {
    const output = expectMasked(`iban ${IBAN_SPACED} ok`, IBAN_SPACED, IBAN.slice(2), '0540 1026');
    expect(output).toBe(`iban IR${'*'.repeat(22)}02 ok`);
    const dashed = IBAN_SPACED.replace(/ /g, '-');
    expect(expectMasked(`iban ${dashed} ok`, dashed, '0540-1026')).toBe(`iban IR${'*'.repeat(22)}02 ok`);
  });

  it('masks Persian and Arabic-Indic digit runs (national code, mobile, IBAN)', () => {
    for (const form of [persian, arabic]) {
      expectMasked(`code ${form(NATIONAL_CODE)}`, form(NATIONAL_CODE), form(NATIONAL_CODE).slice(2, 8));
      expectMasked(`mobile ${form(MOBILE)} and +${form('989121234567')}`, form(MOBILE), form('989121234567'));
      expectMasked(`iban IR${form(IBAN.slice(2))}`, form(IBAN.slice(2)));
    }
  });

  it('masks a spaced IBAN written with Persian digits', () => {
    expectMasked(`iban ${persian(IBAN_SPACED)}`, persian('0540 1026'), persian('0817 9090'));
  });

  it('masks mixed Persian and ASCII digit runs', () => {
    const mixed = '04۹۹37٠899';
    expectMasked(`code ${mixed}`, mixed, '۹۹37٠8');
  });

  it('masks several identifiers in one line', () => {
    const output = expectMasked(`${NATIONAL_CODE} / ${MOBILE} / ${IBAN}`, NATIONAL_CODE, MOBILE, IBAN);
    expect(output).toBe(`04******99 / 09*******67 / IR${'*'.repeat(22)}02`);
  });
});

describe('redactText: credentials', () => {
  it.each([
    [
      'Bearer token',
      'Authorization: Bearer eyJhbGciOi.payload-part_x.sig~+/=',
      'eyJhbGciOi',
      'Authorization: Bearer [redacted]',
    ],
    ['bearer (lower case)', 'sent bearer abc.DEF-123_x', 'abc.DEF-123_x', 'sent bearer [redacted]'],
    ['password=…', 'login password=hunter2!x and more', 'hunter2', 'login password=[redacted] and more'],
    ['password: …', 'password: s3cret', 's3cret', 'password: [redacted]'],
    [
      '"accessToken":"…"',
      '{"accessToken":"aT0k.en-value","expiresTn":3600}',
      'aT0k.en-value',
      '{"accessToken":"[redacted]","expiresTn":3600}',
    ],
    ['"refreshToken": "…"', '{"refreshToken": "rT0ken"}', 'rT0ken', '{"refreshToken": "[redacted]"}'],
    ['access_token=…', 'access_token=abc123 x=1', 'abc123', 'access_token=[redacted] x=1'],
    ["'password': '…'", "{'password': 'p4ss'}", 'p4ss', "{'password': '[redacted]'}"],
    ['apiKey=…', 'apiKey=k3y-value', 'k3y-value', 'apiKey=[redacted]'],
    ['x-api-key: …', 'x-api-key: key-full-0123456789', 'key-full', 'x-api-key: [redacted]'],
    ['secret=…', 'client secret=abc', 'abc', 'client secret=[redacted]'],
  ])('%s', (_label, input, raw, expected) => {
    expect(expectMasked(input, raw)).toBe(expected);
  });
});

describe('redactText: what stays readable', () => {
  it.each([
    'token renewal failed (credentials_rejected: Username or password is incorrect); next attempt in 2000 ms',
    'POST /api/v5/KYC/CheckShahkar -> success in 12 ms',
    'no Redis configured: using the in-process store, fit for ONE replica only',
    'upstream rejected http=422 code=2 type=BadRequest',
    'listening on 127.0.0.1:3000 at 2024-05-01T10:20:30.123Z',
    'سلام دنیا',
  ])('%j', (text) => {
    expect(redactText(text)).toBe(text);
  });

  it.each([
    '3aa71531-26f9-441f-a01a-493f40f0ea1a',
    // UUIDs whose groups are all digits must survive too.
    '12345678-1234-4123-8123-123456789012',
    '00000000-0000-4000-8000-000000000000',
    'ABCDEF01-2345-4678-9ABC-DEF012345678',
  ])('the UUID %s is not mangled', (uuid) => {
    expect(redactText(`inquiry ${uuid} could not be settled`)).toBe(`inquiry ${uuid} could not be settled`);
    expect(redactText(`{"trackId":"${uuid}"}`)).toBe(`{"trackId":"${uuid}"}`);
    expect(redactText(uuid)).toBe(uuid);
  });

  it('masks digits next to a UUID while keeping the UUID', () => {
    const uuid = '3aa71531-26f9-441f-a01a-493f40f0ea1a';
    expect(redactText(`inquiry ${uuid}: nationalCode ${NATIONAL_CODE}`)).toBe(
      `inquiry ${uuid}: nationalCode 04******99`,
    );
  });

  it('does not treat a long digit run as a UUID just because a UUID-like tail follows it', () => {
    const output = redactText('x 0499370899123-1234-4123-8123-123456789012');
    expect(output).not.toContain(NATIONAL_CODE);
  });
});
