import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import type { InquiryPriceTable, RecordedPrice } from '../config/budget-config.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

export type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/**
 * What an inquiry costs in the company's cost units (`INQUIRY_PRICES`, docs/api.md §6): what
 * budgets reserve and the ledger records as `costUnits`. The table is validated at startup, so
 * every operation and handling type has a price. And what one unit costs in money now
 * (`COST_UNIT_PRICE`), stamped on each inquiry when it is made, so that money is read from that
 * recorded fact, never from a later price (docs/decisions/0015-recorded-unit-price.md).
 */
@Injectable()
export class InquiryPrices {
  private readonly table: InquiryPriceTable;
  /** The record's `unitPrice` and `currency`; empty when COST_UNIT_PRICE is unset (nothing is stamped). */
  readonly recordedPrice: RecordedPrice;

  constructor(config: ConfigService<AppConfig, true>) {
    this.table = config.get('inquiryPrices', { infer: true });
    const price = config.get('budgets', { infer: true })?.unitPrice;
    // One frozen object, spread into each record: no work per inquiry beyond the copy.
    this.recordedPrice = Object.freeze(price ? { unitPrice: price.amount, currency: price.currency } : {});
  }

  unitsOf(operation: InquiryOperation, handling: RequestHandlingType): number {
    return this.table[operation][handling];
  }
}
