import { Global, Module } from '@nestjs/common';
import { InquiryPrices } from './inquiry-prices.js';

/**
 * Accounting (docs/api.md §6): prices now. Global, so the budgets (below the inquiry layer) and
 * the ledger take `InquiryPrices` without importing the module that also holds the ledger.
 */
@Global()
@Module({
  providers: [InquiryPrices],
  exports: [InquiryPrices],
})
export class AccountingModule {}
