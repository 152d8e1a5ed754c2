/**
 * Failures at awkward moments: the store failing right after the upstream issued a token
 * pair, and shutdown while inquiries are in flight.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { AppModule } from '../src/app.module.js';
import { loadConfig } from '../src/config/load-config.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import { MemoryTokenStore } from '../src/token/memory-token.store.js';
import { TokenProvider } from '../src/token/token.provider.js';
import { TokenStore } from '../src/token/token.store.js';
import type { TokenRecord } from '../src/token/token-record.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_API_KEYS, TEST_CLIENTS, callGateway, startGateway, untilStarted } from './support/gateway.js';

/** Reads work; every write of a renewed record fails as if Redis had just gone away. */
class WriteFailingTokenStore extends MemoryTokenStore {
  writes = 0;
  override writeIfOwner(
    _owner: string,
    _generation: number,
    _record: Omit<TokenRecord, 'generation'>,
  ): Promise<number | null> {
    this.writes += 1;
    return Promise.reject(new StoreUnavailableError('token write'));
  }
}

describe('resilience', () => {
  let sim: UpstreamSimulator;
  afterEach(() => sim.stop());

  it('keeps a token pair the upstream issued even when the store fails to save it: one GetToken, not two', async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    const store = new WriteFailingTokenStore();
    const config = loadConfig({
      UPSTREAM_BASE_URL: sim.baseUrl,
      UPSTREAM_USERNAME: 'sandbox-user',
      UPSTREAM_PASSWORD: 'sandbox-password',
      API_KEYS: TEST_API_KEYS,
      // Never the default .data/ledger in the repository (the suite leaves the tree as it found it).
      LEDGER_DATA_DIR: 'memory://',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.register(config)] })
      .overrideProvider(TokenStore)
      .useValue(store)
      .setLogger(false as never)
      .compile();
    const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    await app.init();
    try {
      await untilStarted(app);
      const tokens = app.get(TokenProvider);
      const first = await tokens.getAccessToken();
      expect(await tokens.getAccessToken()).toBe(first);
      expect(store.writes).toBe(1);
      expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 0, failed: 0 });
    } finally {
      await app.close();
    }
  });

  it('shutdown lets in-flight inquiries finish and record their outcome', async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    const gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    await untilStarted(gateway.app);
    sim.setLatency(300);
    const answered = new Promise((resolve) => sim.once('inquiry', resolve));
    const inFlight = callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: { nationalCode: '0499370899', mobileNumber: '09121234567' },
    });
    // Shutdown begins once the upstream holds the request (it answers after its latency).
    while (sim.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const closing = gateway.close();
    const response = await inFlight;
    await closing;
    await answered;
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('succeeded');
    expect(sim.chargeCount(String(response.body.trackId))).toBe(1);
  });
});
