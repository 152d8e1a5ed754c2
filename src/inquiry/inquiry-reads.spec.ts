import { describe, expect, it } from '@jest/globals';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { DEADLINE_MARGIN_MS } from './inquiry-deadline.js';
import { InquiryReads } from './inquiry-reads.js';
import { InquiryWaits } from './inquiry-waits.js';
import { MemorySettledNotices } from './settled-notices.js';
import { pendingRecord } from '../../test/support/inquiry-records.js';

/**
 * `InquiryReads.find` with `Prefer: wait`: its rounds of waiting (a timer may fire a few ms
 * early) must each wait. Found by review: once shutdown has begun, held waits end at once, and
 * the rounds re-read the record in a loop until the caller's whole wait had passed (290 000
 * reads in 500 ms). The waits are real; the record store is a counting fake.
 */
describe('InquiryReads.find long-poll', () => {
  it.each([
    ['a minute from its deadline', 60_000],
    ['30 ms from reading unknown', 30 - DEADLINE_MARGIN_MS],
  ])('answers at once, with few reads, when shutdown has ended held waits (record %s)', async (_name, deadlineIn) => {
    const now = Date.now();
    const pending = pendingRecord({
      createdAt: new Date(now).toISOString(),
      deadlineAt: new Date(now + deadlineIn).toISOString(),
    });
    let reads = 0;
    const records = {
      get: () => {
        reads += 1;
        return Promise.resolve({ ...pending });
      },
    };
    const config = { get: () => ({ maxHeld: 10 }) } as never;
    const waits = new InquiryWaits(config, new MemorySettledNotices(), new GatewayMetrics());
    waits.onModuleInit();
    const inquiries = new InquiryReads(
      records as never,
      { inquiry: () => Promise.resolve(null) } as never,
      waits,
      new SubjectHasher([]),
    );
    waits.releaseAll(); // shutdown has begun; the listener still answers
    const started = Date.now();
    const { view } = await inquiries.find(
      { clientId: 'svc-a', scopes: new Set(), credential: 'api_key' },
      pending.trackId,
      2_000,
    );
    expect(['pending', 'unknown']).toContain(view.status);
    expect(reads).toBeLessThan(5);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
