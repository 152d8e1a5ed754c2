import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { RefusalTally } from './refusal-tally.js';

const NOON = Date.parse('2031-05-04T12:00:00Z');

async function dropped(registry: Registry): Promise<number> {
  const metric = await registry.getSingleMetric('vgw_refusal_tally_dropped_total')!.get();
  return metric.values[0]?.value ?? 0;
}

describe('RefusalTally', () => {
  it('counts by day in its zone, client, operation and reason; take empties it', () => {
    const tally = new RefusalTally('Asia/Tehran', new Registry());
    tally.count('shop', 'shahkar', 'budget', NOON);
    tally.count('shop', 'shahkar', 'budget', NOON);
    tally.count('shop', 'iban', 'quota', NOON);
    // 21:00 UTC is already the next day in Tehran (+03:30).
    tally.count('shop', 'shahkar', 'budget', Date.parse('2031-05-04T21:00:00Z'));
    expect(tally.take()).toEqual([
      { day: '2031-05-04', clientId: 'shop', operation: 'shahkar', reason: 'budget', count: 2 },
      { day: '2031-05-04', clientId: 'shop', operation: 'iban', reason: 'quota', count: 1 },
      { day: '2031-05-05', clientId: 'shop', operation: 'shahkar', reason: 'budget', count: 1 },
    ]);
    expect(tally.take()).toEqual([]);
  });

  it('holds at most its cap of keys: new keys beyond it are counted as dropped, held keys still count', async () => {
    const registry = new Registry();
    const tally = new RefusalTally('UTC', registry, 10);
    let nearFull = 0;
    tally.onNearFull(() => nearFull++);
    for (let i = 0; i < 15; i++) tally.count(`c${i}`, 'iban', 'quota', NOON);
    tally.count('c0', 'iban', 'quota', NOON);
    expect(tally.size).toBe(10);
    expect(nearFull).toBe(1);
    expect(await dropped(registry)).toBe(5);
    expect(tally.take().find((c) => c.clientId === 'c0')?.count).toBe(2);
  });

  it('takes back what a failed write gave back, merged with what came meanwhile, within the cap', async () => {
    const registry = new Registry();
    const tally = new RefusalTally('UTC', registry, 2);
    tally.count('a', 'shahkar', 'budget', NOON);
    tally.count('b', 'shahkar', 'budget', NOON);
    const taken = tally.take();
    tally.count('a', 'shahkar', 'budget', NOON);
    tally.count('c', 'shahkar', 'budget', NOON);
    tally.giveBack(taken);
    expect(tally.take().map((c) => [c.clientId, c.count])).toEqual([
      ['a', 2],
      ['c', 1],
    ]);
    expect(await dropped(registry)).toBe(1);
  });
});
