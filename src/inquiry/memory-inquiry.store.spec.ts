import { describe, expect, it } from '@jest/globals';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { InquiryRecord } from './inquiry-record.js';
import { MemoryIdempotencyStore, MemoryInquiryStore } from './memory-inquiry.store.js';

const record = (trackId: string): InquiryRecord => ({
  trackId,
  clientId: 'c1',
  operation: 'shahkar',
  requestHandlingType: 'standard',
  fingerprint: 'f',
  status: 'pending',
  createdAt: '2026-01-01T00:00:00.000Z',
});

describe('in-process stores when full', () => {
  it('refuse a new Idempotency-Key with 503 store_unavailable and forget none before its TTL', async () => {
    const claims = new MemoryIdempotencyStore(3);
    for (const key of ['k1', 'k2', 'k3']) {
      expect(
        await claims.claim('c1', key, { trackId: `t-${key}`, fingerprint: 'f', state: 'in_flight' }, 3600),
      ).toBeNull();
    }
    const refused = claims.claim('c1', 'k4', { trackId: 't-k4', fingerprint: 'f', state: 'in_flight' }, 3600);
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toMatchObject({ status: 503, code: 'store_unavailable' });
    // Every earlier key is still claimed: a retry with it is never run (and charged) afresh.
    for (const key of ['k1', 'k2', 'k3']) {
      expect(
        await claims.claim('c1', key, { trackId: 'retry', fingerprint: 'f', state: 'in_flight' }, 3600),
      ).toMatchObject({
        trackId: `t-${key}`,
      });
    }
    await claims.complete('c1', 'k1', { trackId: 't-k1', fingerprint: 'f', state: 'done' });
    expect(
      await claims.claim('c1', 'k1', { trackId: 'retry', fingerprint: 'f', state: 'in_flight' }, 3600),
    ).toMatchObject({
      state: 'done',
    });
  });

  it('refuse a new record, and still settle the ones they hold', async () => {
    const records = new MemoryInquiryStore(2);
    await records.create(record('t1'), 3600);
    await records.create(record('t2'), 3600);
    await expect(records.create(record('t3'), 3600)).rejects.toMatchObject({ code: 'store_unavailable' });
    await records.settle({ ...record('t1'), status: 'succeeded' });
    expect(await records.get('t1')).toMatchObject({ status: 'succeeded' });
    expect(await records.get('t2')).toMatchObject({ status: 'pending' });
  });

  it('make room as entries expire', async () => {
    const records = new MemoryInquiryStore(1);
    await records.create(record('short'), 0.001);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await records.create(record('next'), 3600);
    expect(await records.get('next')).toMatchObject({ trackId: 'next' });
  });
});
