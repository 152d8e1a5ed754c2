import { describe, expect, it } from '@jest/globals';
import { GatewayMetrics } from '../observability/metrics.js';
import { ReuseCounters } from './reuse-counters.js';
import type { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { BUILT_IN_OPERATIONS } from '../inquiry/catalog/built-in-operations.js';

describe('reuse metrics', () => {
  it('every operation and result exists at 0 from start-up, then counts', async () => {
    const metrics = new GatewayMetrics();
    const catalog = [...BUILT_IN_OPERATIONS, { name: 'card-to-iban' }];
    const counters = new ReuseCounters(metrics, { get: () => catalog } as unknown as ConfigService<AppConfig, true>);
    const text = () => metrics.registry.metrics();
    for (const operation of ['shahkar', 'iban', 'card-to-iban']) {
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
