import { afterAll, beforeAll } from '@jest/globals';
import { UpstreamSimulator } from '../upstream-simulator/upstream-simulator.js';
import { startGateway, type RunningGateway } from './gateway.js';

/**
 * For the specs that read the OpenAPI document the gateway serves: starts a gateway on the
 * simulator before the spec's tests and fetches `/docs-json`; stops both after them. Read the
 * fields inside tests (they are set in beforeAll).
 */
export function servedDocument<T>(): { gateway: RunningGateway; served: T } {
  const fixture = {} as { gateway: RunningGateway; served: T };
  let sim: UpstreamSimulator | undefined;
  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    fixture.gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    fixture.served = (await (await fetch(`${fixture.gateway.url}/docs-json`)).json()) as T;
  });
  afterAll(async () => {
    await fixture.gateway?.close();
    await sim?.stop();
  });
  return fixture;
}
