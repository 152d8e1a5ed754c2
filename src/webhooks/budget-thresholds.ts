import type { Budgets } from '../budget/budgets.js';
import type { WebhookOutbox } from './webhook-outbox.js';

/** The shares of a window's limit whose passing is told (docs/api.md §9). */
export const THRESHOLDS = [80, 100] as const;

/**
 * `budget.threshold`: each replica looks at the budgets now and then, and writes an event for
 * every window whose spent units passed 80 % or 100 % of its limit; the outbox's uniqueness
 * (endpoint, budget, window, threshold) makes it once per window across replicas, whoever saw
 * it first (test/webhooks.e2e.spec.ts, "50 concurrent inquiries"). Nothing on the inquiry's path.
 */
export class BudgetThresholds {
  /** Keys this replica already wrote or found written: not asked again. */
  private readonly told = new Set<string>();

  constructor(
    private readonly budgets: Budgets,
    private readonly outbox: WebhookOutbox,
  ) {}

  async check(): Promise<void> {
    for (const { clientId, budgets } of await this.budgets.all()) {
      for (const budget of budgets) {
        for (const threshold of THRESHOLDS) {
          if (budget.spentUnits * 100 < budget.limitUnits * threshold) continue;
          const key = `${clientId}:${budget.window}:${budget.resetsAt}:${threshold}`;
          if (this.told.has(key)) continue;
          await this.outbox.recordThreshold(key, clientId, {
            budget: clientId,
            window: budget.window,
            threshold,
            limitUnits: budget.limitUnits,
            spentUnits: budget.spentUnits,
            resetsAt: budget.resetsAt,
          });
          this.told.add(key);
        }
      }
    }
    if (this.told.size > 10_000) this.told.clear();
  }
}
