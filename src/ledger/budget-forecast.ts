import type { ClientBudgets } from '../budget/budgets.js';

const DAY_MS = 86_400_000;
/** The rate is that of the last RATE_DAYS days: a week, so that a quiet weekend day does not decide it. */
export const RATE_DAYS = 7;

/** One budget looking ahead (docs/api.md §7, `GET /admin/forecast`). */
export interface BudgetForecast {
  clientId: string;
  window: 'daily' | 'monthly';
  limitUnits: number;
  /** Spent and reserved in the current window, as the budget counts them (`GET /admin/budgets`). */
  usedUnits: number;
  resetsAt: string;
  /** Units the ledger records as spent in the last RATE_DAYS days, by the budget's client (all for `*`). */
  lastDaysUnits: number;
  /** lastDaysUnits / RATE_DAYS, two decimals, rounded down (a decimal string: exact). */
  ratePerDay: string;
  /**
   * When the budget runs out at that rate: now + remaining / rate. `null` when it does not run out
   * before the window resets ("not this window") or nothing was spent; now when it is used up.
   */
  runsOutAt: string | null;
}

/** The company's month: what the ledger records as spent in the current monthly window, and where that rate leads. */
export interface CompanyForecast {
  window: 'monthly';
  startsAt: string;
  resetsAt: string;
  spentUnits: number;
  lastDaysUnits: number;
  ratePerDay: string;
  /** spentUnits + rate × the time left in the window, rounded down: the month's spend at this rate. */
  projectedUnits: number;
}

/** `units / days` to two decimals, rounded down, exactly (BigInt). */
export function ratePerDay(units: number): string {
  const hundredths = (BigInt(units) * 100n) / BigInt(RATE_DAYS);
  return `${hundredths / 100n}.${String(hundredths % 100n).padStart(2, '0')}`;
}

/**
 * The instant a budget runs out: `now + remaining × RATE_DAYS days / lastDaysUnits`, in whole
 * milliseconds rounded down (BigInt: no float), or null past the window's reset or without spend.
 */
export function runsOutAt(
  now: number,
  limitUnits: number,
  usedUnits: number,
  lastDaysUnits: number,
  resetsAt: number,
): number | null {
  const remaining = limitUnits - usedUnits;
  if (remaining <= 0) return now;
  if (lastDaysUnits <= 0) return null;
  const at = now + Number((BigInt(remaining) * BigInt(RATE_DAYS * DAY_MS)) / BigInt(lastDaysUnits));
  return at < resetsAt ? at : null;
}

/** Every configured budget's forecast from its state and the ledger's spend of the last days per client. */
export function budgetForecasts(
  now: number,
  budgets: ClientBudgets[],
  lastDays: Map<string, number>,
): BudgetForecast[] {
  const everyone = [...lastDays.values()].reduce((sum, units) => sum + units, 0);
  const forecasts: BudgetForecast[] = [];
  for (const client of budgets) {
    const lastDaysUnits = client.clientId === '*' ? everyone : (lastDays.get(client.clientId) ?? 0);
    for (const budget of client.budgets) {
      const usedUnits = budget.spentUnits + budget.reservedUnits;
      const end = runsOutAt(now, budget.limitUnits, usedUnits, lastDaysUnits, Date.parse(budget.resetsAt));
      forecasts.push({
        clientId: client.clientId,
        window: budget.window,
        limitUnits: budget.limitUnits,
        usedUnits,
        resetsAt: budget.resetsAt,
        lastDaysUnits,
        ratePerDay: ratePerDay(lastDaysUnits),
        runsOutAt: end === null ? null : new Date(end).toISOString(),
      });
    }
  }
  return forecasts;
}

/** The company's monthly window: spent so far (ledger) and the month's spend at the last days' rate. */
export function companyForecast(
  now: number,
  window: { startsAt: number; resetsAt: number },
  spentUnits: number,
  lastDaysUnits: number,
): CompanyForecast {
  const ahead = (BigInt(lastDaysUnits) * BigInt(Math.max(0, window.resetsAt - now))) / BigInt(RATE_DAYS * DAY_MS);
  return {
    window: 'monthly',
    startsAt: new Date(window.startsAt).toISOString(),
    resetsAt: new Date(window.resetsAt).toISOString(),
    spentUnits,
    lastDaysUnits,
    ratePerDay: ratePerDay(lastDaysUnits),
    projectedUnits: spentUnits + Number(ahead),
  };
}
