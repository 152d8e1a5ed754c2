import 'reflect-metadata';
import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import type { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { Secret } from '../config/secret.js';
import { ShahkarRequestDto } from '../inquiry/dto/shahkar-request.dto.js';
import { validateInquiryBody } from '../inquiry/validation/inquiry-request.validation.js';
import { canonicalQuestion, questionKey, reusePartition, ReuseQuestions } from './reuse-key.js';
import type { ReuseConfig } from '../config/reuse-config.js';

const HMAC = 'reuse-key-spec-0123456789abcdef-0123456789';
const service = (id: string): Caller => ({ clientId: id, scopes: new Set(), credential: 'api_key' });
const app = (azp: string, sub?: string, iss = 'https://id.example.com'): Caller => ({
  clientId: `jwt:${azp}`,
  scopes: new Set(),
  credential: 'jwt',
  issuer: iss,
  ...(sub !== undefined ? { subject: sub } : {}),
});

function questions(reuse: ReuseConfig): ReuseQuestions {
  const config = { get: (name: string) => (name === 'reuse' ? reuse : undefined) };
  return new ReuseQuestions(config as unknown as ConfigService<AppConfig, true>);
}
const everyShare = (share: 'subject' | 'client' | 'company') =>
  questions({ operations: { shahkar: { maxAgeSeconds: 60, share } }, hmacKey: new Secret(HMAC) });
const FIELDS = { nationalCode: '0499370899', mobileNumber: '09121234567' };

describe('reuse partitions (docs/api.md §2, "Partitions")', () => {
  it.each<[string, 'subject' | 'client' | 'company', Caller, readonly string[] | undefined]>([
    ['an API key, subject: its client', 'subject', service('svc'), ['subject', 'key', 'svc']],
    ['an API key, client', 'client', service('svc'), ['client', 'key', 'svc']],
    [
      'a JWT, subject: client, issuer and sub',
      'subject',
      app('m', 'u1'),
      ['subject', 'jwt', 'jwt:m', 'https://id.example.com', 'u1'],
    ],
    ['a JWT, client: its client only', 'client', app('m', 'u1'), ['client', 'jwt', 'jwt:m']],
    ['a JWT without sub never shares under subject', 'subject', app('m'), undefined],
    ['anyone, company', 'company', app('m', 'u1'), ['company']],
  ])('%s', (_name, share, caller, partition) => {
    expect(reusePartition(share, caller)).toEqual(partition);
  });

  it('an API key and a JWT naming the same client never share under subject or client', () => {
    // Even were a client id the same for both credentials, the kind keeps them apart.
    const key = { ...service('svc') };
    const jwt = { ...app('x', 'u'), clientId: 'svc' };
    for (const share of ['subject', 'client'] as const) {
      expect(reusePartition(share, key)).not.toEqual(reusePartition(share, jwt));
    }
  });
});

describe('question keys', () => {
  const key = createSecretKey(Buffer.from(HMAC));

  it('are HMAC-SHA256 hex of a canonical text with fields sorted by name; the order of the body does not matter', () => {
    const a = questionKey(key, canonicalQuestion(['company'], 'shahkar', FIELDS));
    const b = questionKey(
      key,
      canonicalQuestion(['company'], 'shahkar', {
        mobileNumber: FIELDS.mobileNumber,
        nationalCode: FIELDS.nationalCode,
      }),
    );
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toBe(a);
    expect(canonicalQuestion(['company'], 'shahkar', FIELDS)).toBe(
      '["vgw-reuse-v1",["company"],"shahkar",[["mobileNumber","09121234567"],["nationalCode","0499370899"]]]',
    );
  });

  it('differ by operation, field, partition and key; no separator in an id can imitate another partition', () => {
    const base = questionKey(key, canonicalQuestion(['client', 'key', 'svc'], 'shahkar', FIELDS));
    const others = [
      questionKey(key, canonicalQuestion(['client', 'key', 'svc'], 'iban', FIELDS)),
      questionKey(
        key,
        canonicalQuestion(['client', 'key', 'svc'], 'shahkar', { ...FIELDS, mobileNumber: '09121234568' }),
      ),
      questionKey(key, canonicalQuestion(['client', 'key', 'svd'], 'shahkar', FIELDS)),
      questionKey(key, canonicalQuestion(['client', 'key', 'svc', ''], 'shahkar', FIELDS)),
      questionKey(
        createSecretKey(Buffer.from(HMAC + '!')),
        canonicalQuestion(['client', 'key', 'svc'], 'shahkar', FIELDS),
      ),
    ];
    expect(new Set([base, ...others]).size).toBe(6);
    expect(canonicalQuestion(['client', 'jwt', 'a","b'], 'iban', {})).not.toBe(
      canonicalQuestion(['client', 'jwt', 'a', 'b'], 'iban', {}),
    );
  });

  it('Persian and ASCII digits are the same question once validation has normalised them', () => {
    const persian = validateInquiryBody(ShahkarRequestDto, {
      nationalCode: '۰۴۹۹۳۷۰۸۹۹',
      mobileNumber: '+98٩١٢١٢٣٤٥٦٧',
      requestHandlingType: 'advanced',
    });
    const ascii = validateInquiryBody(ShahkarRequestDto, { nationalCode: '0499370899', mobileNumber: '09121234567' });
    const fields = (dto: ShahkarRequestDto) => ({ nationalCode: dto.nationalCode, mobileNumber: dto.mobileNumber });
    const reuse = everyShare('company');
    // requestHandlingType is not part of the stored answer's key.
    expect(reuse.of(service('a'), 'shahkar', fields(persian))?.key).toBe(
      reuse.of(service('b'), 'shahkar', fields(ascii))?.key,
    );
  });

  it('ReuseQuestions: none for an operation not configured, a caller without partition, or without a key', () => {
    expect(everyShare('subject').of(service('a'), 'iban', { iban: 'IR1' })).toBeUndefined();
    expect(everyShare('subject').of(app('m'), 'shahkar', FIELDS)).toBeUndefined();
    expect(
      questions({ operations: { shahkar: { maxAgeSeconds: 60, share: 'company' } } }).of(
        service('a'),
        'shahkar',
        FIELDS,
      ),
    ).toBeUndefined();
    const found = everyShare('client').of(service('a'), 'shahkar', FIELDS);
    expect(found).toEqual({
      policy: { maxAgeSeconds: 60, share: 'client' },
      key: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(everyShare('client').of(service('b'), 'shahkar', FIELDS)?.key).not.toBe(found?.key);
  });
});
