import { Controller, Get, Query, Res, UseGuards } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { FastifyReply } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import type { AppConfig } from '../config/app-config.js';
import type { BudgetConfig, UnitPrice } from '../config/budget-config.js';
import { BudgetCalendar } from '../budget/budget-windows.js';
import { Budgets } from '../budget/budgets.js';
import { operatorOnly } from './admin.controller.js';
import {
  inquiryFilterOf,
  invalidParameter,
  listCursorOf,
  listLimitOf,
  single,
  type AdminQuery,
} from './admin-query.js';
import { RATE_DAYS, budgetForecasts, companyForecast } from './budget-forecast.js';
import { ApiForecast, ApiInquiryList, ApiTrends } from './console-reads.openapi.js';
import { trackingStates } from './tracking-reads.js';
import { InquiryList, encodeCursor } from './inquiry-list.js';
import { LedgerCalls } from './ledger-call.js';
import { ledgerRange } from './ledger-dates.js';
import type { LedgerEntry } from './ledger-entry.js';
import { trends, unitsSpentSince } from './ledger-trends.js';
import { LedgerStore } from './ledger.store.js';
import { moneyOf } from './money.js';
import { spentJson } from './recorded-money.js';
import { unitsJson } from './unit-sums.js';

const DAY_MS = 86_400_000;

/**
 * What the console reads to answer finance (docs/api.md §7, issue 35): the list of inquiries,
 * the trends per day, client and operation, and the forecast of each budget. Same rules as
 * every administration route: API keys with `ledger:read`, on the ops listener when OPS_PORT is
 * set. Money appears only where COST_UNIT_PRICE is set: recorded units × the unit price each
 * inquiry recorded when it was made (recorded-money.ts); the forecast, a projection, reckons in
 * units and states today's price.
 */
@Controller('admin')
@UseGuards(CallerAuthGuard)
export class ConsoleReadsController {
  private readonly ledger = new LedgerCalls();
  private readonly budgetSettings: BudgetConfig;

  constructor(
    private readonly store: LedgerStore,
    private readonly list: InquiryList,
    private readonly budgets: Budgets,
    config: ConfigService<AppConfig, true>,
  ) {
    this.budgetSettings = config.get('budgets', { infer: true });
  }

  private get price(): UnitPrice | undefined {
    return this.budgetSettings.unitPrice;
  }

  @Get('inquiries')
  @RequireScopes('ledger:read')
  @ApiInquiryList()
  async inquiries(
    @CurrentCaller() caller: Caller,
    @Query() query: AdminQuery,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    operatorOnly(caller);
    const filter = inquiryFilterOf(query);
    const limit = listLimitOf(query);
    const after = listCursorOf(query);
    const { page, tracking } = await this.ledger.run('ledger list', async () => {
      const page = await this.list.page(filter, after, limit);
      // What the provider's tracking service last said of each unknown, or resolved by it.
      const asked = page.inquiries.filter((entry) => entry.status === 'unknown' || entry.resolvedBy === 'tracking');
      return {
        page,
        tracking: await trackingStates(
          this.store,
          asked.map((entry) => entry.trackId),
        ),
      };
    });
    void reply.header('cache-control', 'no-store');
    return {
      from: filter.from.toISOString(),
      to: filter.to.toISOString(),
      ...(this.price ? { currency: this.price.currency } : {}),
      inquiries: page.inquiries.map((entry) => {
        const asked = tracking.get(entry.trackId);
        return { ...this.row(entry), ...(asked ? { tracking: asked } : {}) };
      }),
      next: page.next ? encodeCursor(page.next) : null,
    };
  }

  /**
   * A row of the list: the latest fact, and what it spent (0 when not charged: never the price of
   * a failure), in money at the entry's own recorded `unitPrice` and `currency` (none recorded:
   * no `spentAmount`, never today's price).
   */
  private row(entry: LedgerEntry) {
    const spentUnits = entry.charged === 'no' ? 0 : entry.costUnits;
    const recorded =
      entry.unitPrice !== undefined && entry.currency !== undefined
        ? { amount: entry.unitPrice, currency: entry.currency }
        : undefined;
    return {
      ...entry,
      spentUnits,
      ...(this.price && recorded ? { spentAmount: moneyOf(spentUnits, recorded).amount } : {}),
    };
  }

  @Get('trends')
  @RequireScopes('ledger:read')
  @ApiTrends()
  async trends(
    @CurrentCaller() caller: Caller,
    @Query() query: AdminQuery,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    operatorOnly(caller);
    const { from, to } = ledgerRange(single(query, 'from'), single(query, 'to'));
    const zone = single(query, 'timeZone') ?? this.budgetSettings.timeZone;
    if (zone !== 'UTC' && zone !== this.budgetSettings.timeZone)
      throw invalidParameter('timeZone', `must be UTC or BUDGET_TIMEZONE (${this.budgetSettings.timeZone})`);
    if (to.getTime() - from.getTime() > 400 * DAY_MS)
      throw invalidParameter('to', 'must be at most 400 days after from');
    const found = await this.ledger.run('ledger trends', async () => {
      await this.store.ready();
      return trends(this.store, from, to, zone, this.budgetSettings.timeZone);
    });
    const price = this.price;
    void reply.header('cache-control', 'no-store');
    return {
      timeZone: zone,
      calendar: this.budgetSettings.calendar,
      from: from.toISOString(),
      to: to.toISOString(),
      ...(price ? { currency: price.currency, unitPrice: price.amount } : {}),
      rows: found.rows.map(({ spent, ...row }) => ({
        ...row,
        unitsSpent: unitsJson(row.unitsSpent),
        ...(price ? spentJson(spent, price) : {}),
      })),
      failures: found.failures,
    };
  }

  @Get('forecast')
  @RequireScopes('ledger:read')
  @ApiForecast()
  async forecast(@CurrentCaller() caller: Caller, @Res({ passthrough: true }) reply: FastifyReply) {
    operatorOnly(caller);
    const now = Date.now();
    const month = new BudgetCalendar(this.budgetSettings.timeZone, this.budgetSettings.calendar).windowsAt(now).monthly;
    const since = new Date(now - RATE_DAYS * DAY_MS);
    const [states, [lastDaysExact, thisMonthExact]] = await Promise.all([
      this.budgets.all(),
      this.ledger.run('ledger forecast', () =>
        unitsSpentSince(this.store, [since, new Date(month.startsAt)], new Date(now), this.budgetSettings.timeZone),
      ),
    ]);
    // The forecast reckons in JSON numbers (unitsJson: exact as far as any spend goes).
    const lastDays = new Map([...lastDaysExact].map(([clientId, units]) => [clientId, unitsJson(units)]));
    const thisMonth = new Map([...thisMonthExact].map(([clientId, units]) => [clientId, unitsJson(units)]));
    const sum = (units: Map<string, number>) => [...units.values()].reduce((all, n) => all + n, 0);
    void reply.header('cache-control', 'no-store');
    return {
      checkedAt: new Date(now).toISOString(),
      timeZone: this.budgetSettings.timeZone,
      calendar: this.budgetSettings.calendar,
      rateDays: RATE_DAYS,
      ...(this.price ? { currency: this.price.currency, unitPrice: this.price.amount } : {}),
      budgets: budgetForecasts(now, states, lastDays),
      company: companyForecast(now, month, sum(thisMonth), sum(lastDays)),
      clients: [...thisMonth].map(([clientId, spentUnits]) => ({
        clientId,
        spentUnits,
        lastDaysUnits: lastDays.get(clientId) ?? 0,
      })),
    };
  }
}
