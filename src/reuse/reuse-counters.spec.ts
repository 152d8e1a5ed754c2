import { describe, expect, it } from '@jest/globals';
import { GatewayMetrics } from '../observability/metrics.js';
import { ReuseCounters } from './reuse-counters.js';

describe('reuse metrics', () => {
  it('every operation and result exists at 0 from start-up, then counts', async () => {
    const metrics = new GatewayMetrics();
    const counters = new ReuseCounters(metrics);
    const text = () => metrics.registry.metrics();
    for (const operation of ['shahkar', 'iban']) {
      for (const result of ['hit', 'join', 'stale', 'miss', 'not_cached']) {
        expect(await text()).toContain(`vgw_reuse_total{operation="${operation}",result="${result}"} 0`);
      }
      expect(await text()).toContain(`vgw_reuse_units_saved_total{operation="${operation}"} 0`);
    }
    counters.count('iban', 'hit');
    counters.saved('iban', 3);
    expect(await text()).toContain('vgw_reuse_total{operation="iban",result="hit"} 1');
    expect(await text()).toContain('vgw_reuse_units_saved_total{operation="iban"} 3');
  });
});
