import { Module } from '@nestjs/common';
import { InquiryPrices } from './inquiry-prices.js';

/** Prices (and, with budgets, what is spent): shared by the ledger and the budgets. */
@Module({ providers: [InquiryPrices], exports: [InquiryPrices] })
export class AccountingModule {}
