import { expect } from '@jest/globals';
import type { UpstreamSimulator } from '../upstream-simulator/upstream-simulator.js';
import type { Exchange } from './gateway.js';

/** No body or header of any exchange contains any of `secrets` (internal-api.md §1). */
export function expectNoSecretInExchanges(exchanges: readonly Exchange[], secrets: readonly string[]): void {
  for (const exchange of exchanges) {
    const headers = JSON.stringify([...exchange.headers.entries()]);
    for (const secret of secrets) {
      expect(exchange.text).not.toContain(secret);
      expect(headers).not.toContain(secret);
    }
  }
}

/** Every trackId the upstream charged was charged exactly once (upstream-api-v5.md §4.4 rule 5). */
export function expectEveryTrackIdChargedOnce(sim: UpstreamSimulator): void {
  for (const [trackId, count] of sim.chargesByTrackId) expect({ trackId, count }).toEqual({ trackId, count: 1 });
}
