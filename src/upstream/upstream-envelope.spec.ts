import { describe, expect, it } from '@jest/globals';
import { StoreUnavailableError, storeCall } from '../store/store-unavailable.error.js';
import { ENVELOPE_MAX_DEPTH, isBoundedJson, parseEnvelope } from './upstream-envelope.js';

const meta = { isSuccess: true, code: 0, trackId: 't' };

describe('parseEnvelope bounds the shape of an answer', () => {
  it('takes the contract shapes (IbanInquiry owners are the deepest)', () => {
    const data = { iban: 'IR..', owners: [{ firstName: 'A', lastName: 'B' }] };
    expect(parseEnvelope(JSON.stringify({ meta, data }))).toEqual({ meta, data });
    expect(parseEnvelope(JSON.stringify({ meta, data: null }))).not.toBeNull();
  });

  it('refuses data nested thousands of levels deep without overflowing the stack', () => {
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(parseEnvelope(`{"meta":${JSON.stringify(meta)},"data":${deep}}`)).toBeNull();
  });

  it('refuses data that is not an object, and envelopes with too many values', () => {
    expect(parseEnvelope(JSON.stringify({ meta, data: [1, 2] }))).toBeNull();
    expect(parseEnvelope(JSON.stringify({ meta, data: 'text' }))).toBeNull();
    expect(parseEnvelope(JSON.stringify({ meta, data: { list: Array(20_000).fill(0) } }))).toBeNull();
  });

  it('isBoundedJson counts container depth', () => {
    let value: unknown = 1;
    for (let i = 0; i < ENVELOPE_MAX_DEPTH; i++) value = { a: value };
    expect(isBoundedJson(value, ENVELOPE_MAX_DEPTH, 100)).toBe(true);
    expect(isBoundedJson({ a: value }, ENVELOPE_MAX_DEPTH, 100)).toBe(false);
  });
});

describe('storeCall', () => {
  it('calls only client errors a store outage, not the gateway’s own serialisation failures', async () => {
    await expect(storeCall('x', () => Promise.reject(new Error('Command timed out')))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    await expect(
      storeCall('x', () => Promise.reject(new RangeError('Maximum call stack size exceeded'))),
    ).rejects.toBeInstanceOf(RangeError);
  });
});
