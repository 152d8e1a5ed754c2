/**
 * KeyClaim's own rules, with the Idempotency-Key decisions faked (idempotency.service.spec.ts
 * proves those): which trackId a refusal names, and when the claim's undo waits for the key.
 */
import { describe, expect, it } from '@jest/globals';
import type { Caller } from '../caller-auth/caller.js';
import { ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { HeldKey } from './idempotency.service.js';
import { stamp } from './inquiry-in-flight.js';
import { KeyClaim } from './key-claim.js';

const OTHER = '00000000-0000-4000-8000-000000000009';
const inquiry = () =>
  stamp(
    { clientId: 'svc-a' } as Caller,
    { operation: 'iban', route: '/v1/kyc/iban', requestHandlingType: 'standard', fields: {} },
    'key',
    undefined,
    undefined,
  );

function claimRefusedWith(error: Error): KeyClaim {
  const idempotency = { claim: () => Promise.reject(error) };
  return new KeyClaim(idempotency as never, {} as never, {} as never, {} as never);
}

describe('KeyClaim', () => {
  it.each([
    ['a store failure (503) names this inquiry', new StoreUnavailableError('idempotency claim'), 'own'],
    [
      'a reused key (422) names none: nothing was written under it',
      new ProblemException('idempotency_key_reused', 'x'),
      undefined,
    ],
    [
      'a key in flight (409) names the request in flight',
      new ProblemException('idempotency_key_in_use', 'x', { trackId: OTHER }),
      OTHER,
    ],
  ])('%s', async (_name, error, named) => {
    const stamped = inquiry();
    await expect(claimRefusedWith(error).claim(stamped, 'key')).rejects.toBe(error);
    expect(error.trackId).toBe(named === 'own' ? stamped.trackId : named);
  });

  it('holds the key once claimed', async () => {
    const held = { scopes: ['s'], keySha256: 'k' } as unknown as HeldKey;
    const claims = new KeyClaim(
      { claim: () => Promise.resolve({ held }) } as never,
      {} as never,
      {} as never,
      {} as never,
    );
    const stamped = inquiry();
    expect(await claims.claim(stamped, 'key')).toBeUndefined();
    expect(stamped.key).toBe(held);
  });

  it.each([
    [
      'after a budget refusal, answers only once the key is released',
      new ProblemException('budget_exhausted', 'x'),
      true,
    ],
    ['behind a failing store, does not wait for the release', new StoreUnavailableError('inquiry create'), false],
  ])('undo: %s', async (_name, error, waits) => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const claims = new KeyClaim({ release: () => released } as never, {} as never, {} as never, {} as never);
    const stamped = { ...inquiry(), key: { scopes: ['s'] } as unknown as HeldKey };
    let answered = false;
    const undone = claims.undo(stamped, error).catch((thrown: unknown) => {
      answered = true;
      return thrown;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(!waits);
    release();
    expect(await undone).toBe(error);
  });
});
