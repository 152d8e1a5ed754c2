import type { BudgetMove } from '../budget/budget.store.js';

/**
 * Told each budget move a reconciliation's resolutions and corrections owe (docs/api.md §6):
 * exactly the reservation recorded with the inquiry. Must be idempotent per (trackId,
 * revision); the ledger records each move once told (table ledger_budget_moves). Optional.
 */
export interface ResolutionListener {
  resolved(move: BudgetMove): Promise<void>;
}

export const RESOLUTION_LISTENER = Symbol('RESOLUTION_LISTENER');
