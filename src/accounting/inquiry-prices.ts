import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import type { InquiryPriceTable } from '../config/budget-config.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

export type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/**
 * What an inquiry costs in the company's cost units (`INQUIRY_PRICES`, docs/api.md §6): what
 * budgets reserve and the ledger records as `costUnits`. The table is validated at startup, so
 * every operation and handling type has a price.
 */
@Injectable()
export class InquiryPrices {
  private readonly table: InquiryPriceTable;

  constructor(config: ConfigService<AppConfig, true>) {
    this.table = config.get('inquiryPrices', { infer: true });
  }

  unitsOf(operation: InquiryOperation, handling: RequestHandlingType): number {
    return this.table[operation][handling];
  }
}
