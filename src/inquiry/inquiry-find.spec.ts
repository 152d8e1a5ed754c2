import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import { DEFAULT_INQUIRY_PRICES } from '../config/budget-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { DEADLINE_MARGIN_MS } from './inquiry-deadline.js';
import type { InquiryRecord } from './inquiry-record.js';
import { InquiryService } from './inquiry.service.js';
import { InquiryWaits } from './inquiry-waits.js';
import { MemorySettledNotices } from './settled-notices.js';

/**
 * `InquiryService.find` with `Prefer: wait`: its rounds of waiting (a timer may fire a few ms
 * early) must each wait. Found by review: once shutdown has begun, held waits end at once, and
 * the rounds re-read the record in a loop until the caller's whole wait had passed (290 000
 * reads in 500 ms). Only `find`'s own collaborators are real; the rest is never reached.
 */
describe('InquiryService.find long-poll', () => {
  it.each([
    ['a minute from its deadline', 60_000],
    ['30 ms from reading unknown', 30 - DEADLINE_MARGIN_MS],
  ])('answers at once, with few reads, when shutdown has ended held waits (record %s)', async (_name, deadlineIn) => {
    const now = Date.now();
    const pending: InquiryRecord = {
      trackId: randomUUID(),
      clientId: 'svc-a',
      operation: 'iban',
      requestHandlingType: 'standard',
      fingerprint: 'f'.repeat(64),
      status: 'pending',
      createdAt: new Date(now).toISOString(),
      deadlineAt: new Date(now + deadlineIn).toISOString(),
    };
    let reads = 0;
    const records = {
      accountsWithRecord: false,
      get: () => {
        reads += 1;
        return Promise.resolve({ ...pending });
      },
    };
    const config = {
      get: (name: string) =>
        name === 'idempotency'
          ? { ttlSeconds: 60 }
          : name === 'inquiryWaits'
            ? { maxHeld: 10 }
            : name === 'subjectHash'
              ? { keys: [], derivedFrom: [] }
              : { timeoutMs: 1_000, advancedTimeoutMs: 2_000, circuitResetMs: 1_000 },
    } as never;
    const metrics = new GatewayMetrics();
    const waits = new InquiryWaits(config, new MemorySettledNotices(), metrics);
    waits.onModuleInit();
    const unused = {} as never;
    const service = new InquiryService(
      config,
      records as never,
      unused,
      unused,
      metrics,
      unused,
      waits,
      unused,
      unused,
      { inquiry: () => Promise.resolve(null) } as never,
      unused,
      new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never),
    );
    waits.releaseAll(); // shutdown has begun; the listener still answers
    const started = Date.now();
    const { view } = await service.find(
      { clientId: 'svc-a', scopes: new Set(), credential: 'api_key' },
      pending.trackId,
      2_000,
    );
    expect(['pending', 'unknown']).toContain(view.status);
    expect(reads).toBeLessThan(5);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
