import type { UnknownResolution } from '../budget/budgets.js';

/**
 * Told when a reconciliation resolves an `unknown` inquiry (docs/api.md §7), so that what was
 * held for it (a budget's units) can be released (`no`) or confirmed (`yes`). Optional.
 */
export interface ResolutionListener {
  resolved(resolution: UnknownResolution): Promise<void>;
}

export const RESOLUTION_LISTENER = Symbol('RESOLUTION_LISTENER');
