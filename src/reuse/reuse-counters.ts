import { Injectable } from '@nestjs/common';
import { GatewayMetrics, REUSE_RESULTS, type ReuseResult } from '../observability/metrics.js';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';

/**
 * The reuse metrics (docs/operations.md, "Metrics"): every (operation, result) series and every
 * operation's units saved exist at 0 from start-up, so `increase()` sees the first one.
 */
@Injectable()
export class ReuseCounters {
  constructor(
    private readonly metrics: GatewayMetrics,
    config: ConfigService<AppConfig, true>,
  ) {
    // One series per operation of the catalog: the label set is bounded by it.
    for (const { name: operation } of config.get('operations', { infer: true })) {
      for (const result of REUSE_RESULTS) metrics.reuseLookups.inc({ operation, result }, 0);
      metrics.reuseUnitsSaved.inc({ operation }, 0);
    }
  }

  /** One inquiry whose caller allowed reuse, by how it was answered. */
  count(operation: InquiryOperation, result: ReuseResult): void {
    this.metrics.reuseLookups.inc({ operation, result });
  }

  /** The units a reused answer saved (its own type and price, as its ledger entry's unitsSaved). */
  saved(operation: InquiryOperation, units: number): void {
    if (units > 0) this.metrics.reuseUnitsSaved.inc({ operation }, units);
  }
}
