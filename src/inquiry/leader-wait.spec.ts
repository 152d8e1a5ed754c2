import { describe, expect, it } from '@jest/globals';
import type { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import type { InquiryRecord } from './inquiry-record.js';
import { InquiryWaits } from './inquiry-waits.js';
import { LeaderWait } from './leader-wait.js';
import { MemoryInquiryStore } from './memory-inquiry.store.js';
import { MemorySettledNotices } from './settled-notices.js';

describe('LeaderWait', () => {
  it('a lease left that is no number (an outside reply) ends the wait: one look, never a loop of them', async () => {
    const config = { get: () => ({ maxHeld: 10 }) } as unknown as ConfigService<AppConfig, true>;
    const waits = new InquiryWaits(config, new MemorySettledNotices(), new GatewayMetrics());
    waits.onModuleInit();
    const records = new MemoryInquiryStore();
    await records.create({ trackId: 'leader', status: 'pending' } as InquiryRecord, 60);
    let looks = 0;
    const leaseLeft = () => {
      looks += 1;
      return Promise.resolve(NaN);
    };
    const now = Date.now();
    const settled = await new LeaderWait(waits, records).settled(
      { trackId: 'leader', leaseEndsMs: now },
      now + 500,
      leaseLeft,
    );
    expect(settled).toBeUndefined();
    expect(looks).toBe(1);
  });
});
