import { Injectable } from '@nestjs/common';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/** The default price list of docs/api.md §6 (`INQUIRY_PRICES`): units per operation and handling type. */
const DEFAULT_PRICES: Record<InquiryOperation, Record<RequestHandlingType, number>> = {
  shahkar: { standard: 1, advanced: 3 },
  iban: { standard: 1, advanced: 3 },
};

/** What one inquiry costs in cost units (the ledger's `costUnits`; budgets reserve the same). */
@Injectable()
export class InquiryPrices {
  unitsOf(operation: InquiryOperation, handling: RequestHandlingType): number {
    return DEFAULT_PRICES[operation][handling];
  }
}
