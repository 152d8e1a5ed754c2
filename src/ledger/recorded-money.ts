import type { UnitPrice } from '../config/budget-config.js';
import { moneyOf, sumOf } from './money.js';
import { unitsJson } from './unit-sums.js';

/**
 * Money read back from the ledger (docs/decisions/0015-recorded-unit-price.md): Σ units × the
 * unit price recorded with each entry when its inquiry was made, exact (BigInt on the scaled
 * decimals, money.ts), kept per currency. Units whose entries recorded no price (written before
 * migration 9, or while COST_UNIT_PRICE was unset) are counted apart: never priced at today's
 * price. No currency is converted into another.
 */
export class RecordedMoney {
  /** Currency → the exact amount. */
  private readonly amounts = new Map<string, string>();
  /** Units of entries that recorded no price. */
  unpricedUnits = 0n;

  /** `units` of entries that recorded `unitPrice` in `currency` (null: none recorded). */
  add(units: bigint, unitPrice: string | null, currency: string | null): void {
    if (unitPrice === null || currency === null) {
      this.unpricedUnits += units;
      return;
    }
    const amount = moneyOf(units, { amount: unitPrice, currency }).amount;
    const before = this.amounts.get(currency);
    this.amounts.set(currency, before === undefined ? amount : sumOf(before, amount));
  }

  /** The amount in `currency`: `zero` (today's price's scale) plus what was recorded in it. */
  amountIn(currency: string, zero: string): string {
    const recorded = this.amounts.get(currency);
    return recorded === undefined ? zero : sumOf(zero, recorded);
  }

  /** Currencies recorded other than `currency`, in code order. */
  otherThan(currency: string): string[] {
    return [...this.amounts.keys()].filter((code) => code !== currency).sort();
  }
}

/**
 * A row's spend as the answers write it (docs/api.md §7), against today's COST_UNIT_PRICE:
 * `spentAmount` in today's currency; `unpricedUnits` when some units recorded no price; and
 * `otherCurrencies` when some were recorded in another currency (its amounts as recorded).
 */
export function spentJson(spent: RecordedMoney, price: UnitPrice) {
  const others = spent.otherThan(price.currency);
  return {
    spentAmount: spent.amountIn(price.currency, zeroOf(price)),
    ...(spent.unpricedUnits > 0n ? { unpricedUnits: unitsJson(spent.unpricedUnits) } : {}),
    ...(others.length > 0
      ? { otherCurrencies: others.map((currency) => ({ currency, spentAmount: spent.amountIn(currency, '0') })) }
      : {}),
  };
}

/** A usage row's spend and its reuse savings, each as spentJson writes a spend (`saved…` for the savings). */
export function spentAndSavedJson(spent: RecordedMoney, saved: RecordedMoney, price: UnitPrice) {
  const others = [...new Set([...spent.otherThan(price.currency), ...saved.otherThan(price.currency)])].sort();
  return {
    spentAmount: spent.amountIn(price.currency, zeroOf(price)),
    currency: price.currency,
    savedAmount: saved.amountIn(price.currency, zeroOf(price)),
    ...(spent.unpricedUnits > 0n ? { unpricedUnits: unitsJson(spent.unpricedUnits) } : {}),
    ...(saved.unpricedUnits > 0n ? { unpricedSavedUnits: unitsJson(saved.unpricedUnits) } : {}),
    ...(others.length > 0
      ? {
          otherCurrencies: others.map((currency) => ({
            currency,
            spentAmount: spent.amountIn(currency, '0'),
            savedAmount: saved.amountIn(currency, '0'),
          })),
        }
      : {}),
  };
}

/** Nothing, at today's price's scale (`0`, `0.00`): what a row without spend in that currency shows. */
function zeroOf(price: UnitPrice): string {
  return moneyOf(0, price).amount;
}
