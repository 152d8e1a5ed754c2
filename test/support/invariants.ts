import { expect } from '@jest/globals';
import type { UpstreamSimulator } from '../upstream-simulator/upstream-simulator.js';
import type { Exchange } from './gateway.js';

/** No body or header of any exchange contains any of `secrets` (docs/api.md §1). */
export function expectNoSecretInExchanges(exchanges: readonly Exchange[], secrets: readonly string[]): void {
  for (const exchange of exchanges) {
    const headers = JSON.stringify([...exchange.headers.entries()]);
    for (const secret of secrets) {
      expect(exchange.text).not.toContain(secret);
      expect(headers).not.toContain(secret);
    }
  }
}

/**
 * Every charge the upstream made is traceable: its trackId was handed to a caller (header or
 * body). A gateway that retried blindly under a fresh trackId, or charged for an inquiry it
 * then answered without that trackId, fails this. (The simulator itself refuses a second
 * charge for one trackId, §4.4 rule 5, so counting per trackId could not fail.)
 */
export function expectEveryChargeTraceable(sim: UpstreamSimulator, exchanges: readonly Exchange[]): void {
  const handedOut = new Set<string>();
  for (const exchange of exchanges) {
    const fromHeader = exchange.headers.get('x-track-id');
    if (fromHeader) handedOut.add(fromHeader);
    if (typeof exchange.body.trackId === 'string') handedOut.add(exchange.body.trackId);
  }
  const untraced = [...sim.chargesByTrackId.keys()].filter((trackId) => !handedOut.has(trackId));
  expect(untraced).toEqual([]);
}

/** The RFC 9457 shape of docs/api.md §3: problem+json with the code's type, status, title and detail. */
export function expectProblemShape(res: Exchange, status: number, code: string): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.status).toBe(status);
  expect(res.body.type).toMatch(new RegExp(`^https://.+/problems/${code}$`));
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
}
