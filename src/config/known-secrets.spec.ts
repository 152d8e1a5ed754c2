/** Secrets scrubbed by value (known-secrets.ts): whatever the text's shape, a known value never survives. */
import { describe, expect, it } from '@jest/globals';
import { KnownSecrets } from './known-secrets.js';

describe('KnownSecrets', () => {
  it('scrubs every known value, in any wording and any number of times', () => {
    const secrets = new KnownSecrets();
    secrets.add('credential', 'svc-user', 'pa55-w0rd!');
    expect(secrets.scrub('Login failed for user svc-user with password pa55-w0rd! (pa55-w0rd!)')).toBe(
      'Login failed for user [redacted] with password [redacted] ([redacted])',
    );
  });

  it('scrubs the JSON-escaped form of a value as it appears in a log line', () => {
    const secrets = new KnownSecrets();
    const password = 'p"w\\d-رمز';
    secrets.add('credential', password);
    const line = JSON.stringify({ msg: `echo ${password}` });
    expect(secrets.scrub(line)).toBe('{"msg":"echo [redacted]"}');
    const asciiLine = JSON.stringify({ msg: `echo ${password}` }).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    expect(secrets.scrub(asciiLine)).toBe('{"msg":"echo [redacted]"}');
  });

  it('scrubs a longer value before a shorter one it contains', () => {
    const secrets = new KnownSecrets();
    secrets.add('token', 'abcd', 'abcdefgh');
    expect(secrets.scrub('x abcdefgh y abcd')).toBe('x [redacted] y [redacted]');
  });

  it('ignores values too short to be told from ordinary words, and undefined', () => {
    const secrets = new KnownSecrets();
    secrets.add('credential', 'id', undefined, '');
    expect(secrets.scrub('the id is valid')).toBe('the id is valid');
  });

  it('keeps every API key a caller proved, however many clients there are', () => {
    const secrets = new KnownSecrets();
    const keys = Array.from({ length: 200 }, (_, i) => `api-key-of-client-${i}`);
    for (const key of keys) secrets.add('api_key', key);
    // Requests keep coming with the first keys: nothing is evicted, each is still scrubbed.
    for (const key of keys) secrets.add('api_key', key);
    for (const key of keys) expect(secrets.scrub(`header ${key} echoed`)).toBe('header [redacted] echoed');
  });

  it('keeps only the newest values of a kind (tokens are renewed forever)', () => {
    const secrets = new KnownSecrets();
    const tokens = Array.from({ length: 40 }, (_, i) => `token-${String(i).padStart(4, '0')}`);
    for (const token of tokens) secrets.add('token', token);
    secrets.add('credential', 'the-password');
    expect(secrets.scrub(tokens[39])).toBe('[redacted]');
    expect(secrets.scrub(tokens[0])).toBe(tokens[0]);
    // Other kinds are not pushed out by tokens.
    expect(secrets.scrub('the-password')).toBe('[redacted]');
  });
});
