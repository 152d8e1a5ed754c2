import { describe, expect, it } from '@jest/globals';
import type { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { InquiryWaits } from './inquiry-waits.js';
import { MemorySettledNotices } from './settled-notices.js';

/** Notices whose first SUBSCRIBE fails (Redis away for a moment). */
class FlakyNotices extends MemorySettledNotices {
  watches = 0;

  override watch(): Promise<boolean> {
    this.watches += 1;
    return Promise.resolve(this.watches > 1);
  }
}

function waitsWith<N extends MemorySettledNotices = MemorySettledNotices>(
  maxHeld: number,
  notices: N = new MemorySettledNotices() as N,
) {
  const config = { get: () => ({ maxHeld }) } as unknown as ConfigService<AppConfig, true>;
  const metrics = new GatewayMetrics();
  const waits = new InquiryWaits(config, notices, metrics);
  waits.onModuleInit();
  const count = async (series: string) =>
    (await metrics.registry.getSingleMetric(series)!.get()).values.map((v) => [v.labels.outcome ?? '', v.value]);
  return { waits, notices, count };
}

describe('InquiryWaits', () => {
  it('wakes every waiter of a trackId on its notice, and no other', async () => {
    const { waits, notices } = waitsWith(10);
    const [x1, x2, y] = [(await waits.hold('x'))!, (await waits.hold('x'))!, (await waits.hold('y'))!];
    const results = Promise.all([x1.until(60_000), x2.until(60_000)]);
    const other = y.until(20);
    await notices.publish('x');
    expect(await results).toEqual([true, true]);
    expect(await other).toBe(false);
    for (const wait of [x1, x2, y]) wait.release();
  });

  it('holds at most maxHeld; a released slot is free again; refusals are counted', async () => {
    const { waits, count } = waitsWith(2);
    const a = (await waits.hold('a'))!;
    const b = (await waits.hold('b'))!;
    expect(await waits.hold('c')).toBeNull();
    const refusal = waits.refusal();
    expect(refusal).toBeInstanceOf(ProblemException);
    expect(refusal.status).toBe(429);
    expect(refusal.headers).toEqual({ 'Retry-After': '1' });
    expect(await count('vgw_inquiry_waits_held')).toEqual([['', 2]]);
    a.release();
    a.release(); // idempotent: frees one slot, not two
    const c = await waits.hold('c');
    expect(c).not.toBeNull();
    expect(await waits.hold('d')).toBeNull();
    expect(await count('vgw_inquiry_waits_total')).toEqual(
      expect.arrayContaining([
        ['woken', 0],
        ['timeout', 0],
        ['refused', 1],
      ]),
    );
    b.release();
    c!.release();
    expect(await count('vgw_inquiry_waits_held')).toEqual([['', 0]]);
  });

  it('a notice sent between hold and until still wakes the waiter (hold first, then read)', async () => {
    const { waits, notices } = waitsWith(1);
    const wait = (await waits.hold('x'))!;
    await notices.publish('x');
    expect(await wait.until(60_000)).toBe(true);
    wait.release();
  });

  it('a failed SUBSCRIBE is not reused: the next waiter of the trackId subscribes again', async () => {
    const { waits, notices } = waitsWith(10, new FlakyNotices());
    const first = (await waits.hold('x'))!;
    const second = (await waits.hold('x'))!;
    expect(notices.watches).toBe(2);
    const third = (await waits.hold('x'))!;
    expect(notices.watches).toBe(2);
    for (const wait of [first, second, third]) wait.release();
  });

  it('a wait of no sane length (from a stored deadline) ends at once rather than firing forever', async () => {
    const { waits } = waitsWith(1);
    const wait = (await waits.hold('x'))!;
    expect(await wait.until(Number.NaN)).toBe(false);
    wait.release();
  });

  it('a caller that hung up ends its wait at once', async () => {
    const { waits } = waitsWith(1);
    const wait = (await waits.hold('x'))!;
    const gone = new AbortController();
    const waited = wait.until(60_000, gone.signal);
    gone.abort();
    expect(await waited).toBe(false);
    wait.release();
    expect(await waits.hold('y')).not.toBeNull();
  });

  it('at shutdown wakes every held long-poll, and later ones do not wait', async () => {
    const { waits } = waitsWith(1);
    const held = (await waits.hold('x'))!.until(60_000);
    waits.releaseAll();
    expect(await held).toBe(true);
    expect(await (await waits.hold('y'))!.until(60_000)).toBe(false);
  });

  it("at shutdown a join's wait goes on, held or new, until its leader's notice or its own time", async () => {
    const { waits, notices } = waitsWith(3);
    const joined = (await waits.hold('leader', { join: true }))!;
    let wokenEarly = false;
    const waiting = joined.until(60_000).then((woken) => (wokenEarly = woken));
    waits.releaseAll();
    const late = (await waits.hold('leader', { join: true }))!;
    const startedAt = Date.now();
    expect(await late.until(100)).toBe(false);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(90);
    expect(wokenEarly).toBe(false);
    const lateWoken = late.until(60_000);
    await notices.publish('leader');
    expect(await waiting).toBe(true);
    expect(await lateWoken).toBe(true);
    joined.release();
    late.release();
  });
});
