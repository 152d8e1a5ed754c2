import { inspect } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { parseWebhooks, webhooksConfigFrom } from './webhooks-config.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const entry = (over: Record<string, unknown> = {}) => ({
  id: 'billing',
  clientId: 'svc-a',
  url: 'https://hooks.example.com/kyc',
  secret: SECRET,
  events: ['inquiry.settled'],
  ...over,
});

function parse(entries: unknown, allowHttp = false): { problems: string[]; ids: string[] } {
  const problems: string[] = [];
  const endpoints = parseWebhooks(JSON.stringify(entries), allowHttp, problems);
  return { problems, ids: endpoints.map((e) => e.id) };
}

describe('WEBHOOKS', () => {
  it('accepts an endpoint, and two secrets while rotating', () => {
    const problems: string[] = [];
    const [endpoint] = parseWebhooks(JSON.stringify([entry({ secret: [SECRET, SECRET] })]), false, problems);
    expect(problems).toEqual([]);
    expect(endpoint.keys).toHaveLength(2);
    expect(new URL(endpoint.url.reveal()).host).toBe('hooks.example.com');
  });

  it('never shows a URL (a token in its path or query) when the configuration is serialised', () => {
    const problems: string[] = [];
    const config = webhooksConfigFrom(
      { WEBHOOKS: JSON.stringify([entry({ url: 'https://hooks.example.com/T01/tok-in-path?key=tok-in-query' })]) },
      problems,
    );
    expect(problems).toEqual([]);
    for (const text of [JSON.stringify(config), inspect(config, { depth: 10 }), `${String(config.endpoints[0].url)}`]) {
      expect(text).not.toContain('tok-in-');
    }
  });

  it('refuses http unless WEBHOOKS_ALLOW_HTTP=true', () => {
    expect(parse([entry({ url: 'http://hooks.example.com/' })]).problems).toEqual([
      'WEBHOOKS[billing].url: must be https (http only with WEBHOOKS_ALLOW_HTTP=true)',
    ]);
    expect(parse([entry({ url: 'http://hooks.example.com/' })], true).problems).toEqual([]);
  });

  it('names the entry and the field of a bad entry, never the secret or the URL', () => {
    const { problems, ids } = parse([
      entry(),
      entry({ id: 'ops', secret: 'whsec_c2hvcnQ=', url: 'https://user:pw@x.example/' }),
      entry({ id: 'billing' }),
      entry({ id: 'Bad Id', events: ['inquiry.lost'] }),
    ]);
    expect(problems).toEqual([
      'WEBHOOKS[ops].url: must not hold credentials (the signature authenticates)',
      'WEBHOOKS[ops].secret: must hold 24 to 64 bytes of key (Standard Webhooks)',
      'WEBHOOKS[billing].id: is used twice',
      'WEBHOOKS[3].id: must match ^[a-z0-9][a-z0-9_-]{0,39}$',
      'WEBHOOKS[3].events: must list some of inquiry.settled, inquiry.resolved, budget.threshold, ledger.parked',
    ]);
    expect(ids).toEqual(['billing']);
    expect(problems.join('\n')).not.toMatch(/c2hvcnQ|pw@/);
  });

  it('names WEBHOOKS_FILE when the endpoints came from the file', () => {
    const problems: string[] = [];
    webhooksConfigFrom({ WEBHOOKS: '[{', WEBHOOKS_FILE: '/run/secrets/webhooks' }, problems);
    expect(problems).toEqual(['WEBHOOKS_FILE: is not valid JSON']);
  });

  it('bounds the delivery timings, naming the variable', () => {
    const problems: string[] = [];
    const config = webhooksConfigFrom(
      { WEBHOOKS_POLL_MS: '0', WEBHOOKS_RETRY_FOR_SECONDS: '2', WEBHOOKS_MAX_IN_FLIGHT: 'x' },
      problems,
    );
    expect(problems).toEqual([
      'WEBHOOKS_MAX_IN_FLIGHT: must be an integer from 1 to 32',
      'WEBHOOKS_POLL_MS: must be an integer from 50 to 10000',
    ]);
    expect(config.delivery).toMatchObject({ maxInFlight: 4, pollMs: 50, retryForMs: 2_000, firstRetryMs: 5_000 });
    expect(config.configured).toBe(false);
  });

  it('delivers unless WEBHOOKS_DELIVER=false (a drainer Deployment delivers then), and names a bad value', () => {
    expect(webhooksConfigFrom({}, []).deliver).toBe(true);
    expect(webhooksConfigFrom({ WEBHOOKS_DELIVER: 'false' }, []).deliver).toBe(false);
    const problems: string[] = [];
    expect(webhooksConfigFrom({ WEBHOOKS_DELIVER: 'no' }, problems).deliver).toBe(true);
    expect(problems).toEqual(['WEBHOOKS_DELIVER: must be true or false']);
  });
});
