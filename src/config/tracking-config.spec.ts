import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './load-config.js';
import { trackingConfigFrom } from './tracking-config.js';

const read = (value: unknown) => {
  const problems: string[] = [];
  const config = trackingConfigFrom({ UPSTREAM_TRACKING: JSON.stringify(value) }, problems);
  return { config, problems };
};

const POST_BODY = {
  path: '/api/v5/Report/RequestStatus',
  method: 'POST',
  trackIdAt: 'body',
  charged: { pointer: '/data/status', yes: ['Charged'], no: ['NotCharged', 'Failed'] },
  notFound: 'no',
  afterSeconds: 120,
  perMinute: 60,
};

describe('UPSTREAM_TRACKING', () => {
  it('reads both shapes; unset is off; notFound, afterSeconds and perMinute have defaults', () => {
    expect(read(POST_BODY)).toEqual({ config: POST_BODY, problems: [] });
    const get = {
      path: '/api/v5/Tracking/Requests/{trackId}',
      method: 'GET',
      trackIdAt: 'path',
      charged: { pointer: '/charged', yes: [true], no: [false] },
    };
    expect(read(get)).toEqual({
      config: { ...get, notFound: 'unknown', afterSeconds: 120, perMinute: 60 },
      problems: [],
    });
    expect(trackingConfigFrom({}, [])).toBeUndefined();
  });

  it('clamps afterSeconds and perMinute into their ranges', () => {
    expect(read({ ...POST_BODY, afterSeconds: 0, perMinute: 1_000_000 }).config).toMatchObject({
      afterSeconds: 1,
      perMinute: 6_000,
    });
    expect(read({ ...POST_BODY, afterSeconds: 999_999, perMinute: -5 }).config).toMatchObject({
      afterSeconds: 3_600,
      perMinute: 1,
    });
  });

  it.each([
    ['not JSON', '{', 'UPSTREAM_TRACKING: is not valid JSON'],
    ['an unknown field', { ...POST_BODY, retries: 3 }, 'UPSTREAM_TRACKING: unknown field retries'],
    ['POST with the trackId in the query', { ...POST_BODY, trackIdAt: 'query' }, 'UPSTREAM_TRACKING.trackIdAt'],
    ['another method', { ...POST_BODY, method: 'PUT' }, 'UPSTREAM_TRACKING.method'],
    [
      'a path outside /api/v5',
      { ...POST_BODY, path: '/admin/RequestStatus' },
      'UPSTREAM_TRACKING.path: must match ^/api/v5/',
    ],
    ['a path with ..', { ...POST_BODY, path: '/api/v5/../x' }, 'UPSTREAM_TRACKING.path: must match'],
    ['{trackId} with the body', { ...POST_BODY, path: '/api/v5/R/{trackId}' }, 'UPSTREAM_TRACKING.path: holds'],
    [
      'no {trackId} with path',
      { ...POST_BODY, method: 'GET', trackIdAt: 'path' },
      'UPSTREAM_TRACKING.path: must hold {trackId} once',
    ],
    [
      'a pointer without a leading slash',
      { ...POST_BODY, charged: { ...POST_BODY.charged, pointer: 'data/status' } },
      'UPSTREAM_TRACKING.charged.pointer',
    ],
    [
      'a pointer with a bad escape',
      { ...POST_BODY, charged: { ...POST_BODY.charged, pointer: '/data/~2' } },
      'UPSTREAM_TRACKING.charged.pointer',
    ],
    [
      'an empty yes list',
      { ...POST_BODY, charged: { ...POST_BODY.charged, yes: [] } },
      'UPSTREAM_TRACKING.charged.yes',
    ],
    [
      'an object in a list',
      { ...POST_BODY, charged: { ...POST_BODY.charged, no: [{}] } },
      'UPSTREAM_TRACKING.charged.no',
    ],
    [
      'a value in both lists',
      { ...POST_BODY, charged: { ...POST_BODY.charged, no: ['Charged'] } },
      'UPSTREAM_TRACKING.charged: a value is listed in both',
    ],
    ['another notFound', { ...POST_BODY, notFound: 'yes' }, 'UPSTREAM_TRACKING.notFound'],
    ['a fractional afterSeconds', { ...POST_BODY, afterSeconds: 1.5 }, 'UPSTREAM_TRACKING.afterSeconds'],
  ])('refuses %s, naming the variable and the field', (_name, value, problem) => {
    const problems: string[] = [];
    const raw = typeof value === 'string' ? value : JSON.stringify(value);
    expect(trackingConfigFrom({ UPSTREAM_TRACKING: raw }, problems)).toBeUndefined();
    expect(problems).toEqual([expect.stringContaining(problem)]);
  });

  it('fails the start through loadConfig, also from UPSTREAM_TRACKING_FILE', () => {
    const env = {
      UPSTREAM_BASE_URL: 'http://127.0.0.1:1',
      UPSTREAM_USERNAME: 'u',
      UPSTREAM_PASSWORD: 'p',
      API_KEYS: JSON.stringify([{ clientId: 'a', keySha256: 'a'.repeat(64), scopes: ['kyc:shahkar'] }]),
    };
    expect(() => loadConfig({ ...env, UPSTREAM_TRACKING: '{"path":1}' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, UPSTREAM_TRACKING: '{"path":1}' })).toThrow(/UPSTREAM_TRACKING/);
    expect(loadConfig({ ...env, UPSTREAM_TRACKING: JSON.stringify(POST_BODY) }).tracking).toEqual(POST_BODY);
    expect(loadConfig(env).tracking).toBeUndefined();
  });
});
