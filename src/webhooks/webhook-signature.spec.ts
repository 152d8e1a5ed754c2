import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { Secret } from '../config/secret.js';
import { signedHeaders } from './webhook-signature.js';

const OLD = Buffer.alloc(32, 1).toString('base64');
const NEW = Buffer.alloc(32, 2).toString('base64');
const body = JSON.stringify({ type: 'inquiry.settled', timestamp: '2026-11-28T10:00:00.000Z', data: { trackId: 't' } });

describe('signedHeaders (Standard Webhooks 1.0)', () => {
  it('verifies with the standardwebhooks library under the endpoint secret', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders('msg_1', now, body, [new Secret(OLD)]);
    expect(new Webhook(`whsec_${OLD}`).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('signs once per secret while rotating: a receiver with either verifies', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders('msg_2', now, body, [new Secret(OLD), new Secret(NEW)]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const key of [OLD, NEW]) expect(new Webhook(`whsec_${key}`).verify(body, { ...headers })).toBeTruthy();
  });

  it('fails verification for another body, another id, or an old timestamp (a replay)', () => {
    const now = Math.floor(Date.now() / 1000);
    const receiver = new Webhook(`whsec_${OLD}`);
    const headers = signedHeaders('msg_3', now, body, [new Secret(OLD)]);
    expect(() => receiver.verify(`${body} `, { ...headers })).toThrow();
    expect(() => receiver.verify(body, { ...headers, 'webhook-id': 'msg_4' })).toThrow();
    const old = signedHeaders('msg_3', now - 3600, body, [new Secret(OLD)]);
    expect(() => receiver.verify(body, { ...old })).toThrow();
  });
});
