import type { UnitPrice } from '../config/budget-config.js';

/**
 * Money from cost units (docs/api.md §6, `COST_UNIT_PRICE`): units × the price of one unit that
 * their entries recorded (recorded-money.ts), and sums of such amounts. Exact: the price's decimal
 * string becomes a BigInt of its smallest digit (`0.75` is 75 at scale 2), multiplied, and
 * written back at the price's scale; no floating point anywhere.
 */
export interface Money {
  /** A decimal string at the price's scale: `75000`, `2.25`. */
  amount: string;
  currency: string;
}

interface Scaled {
  digits: bigint;
  scale: number;
}

function scaledOf(amount: string): Scaled {
  const [whole, fraction = ''] = amount.split('.');
  return { digits: BigInt(whole + fraction), scale: fraction.length };
}

function written({ digits, scale }: Scaled): string {
  const negative = digits < 0n;
  const text = (negative ? -digits : digits).toString().padStart(scale + 1, '0');
  const body = scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
  return negative ? `-${body}` : body;
}

/** `units` × the price of one unit, exactly. */
export function moneyOf(units: number | bigint, price: UnitPrice): Money {
  const { digits, scale } = scaledOf(price.amount);
  return { amount: written({ digits: digits * BigInt(units), scale }), currency: price.currency };
}

/** `a` + `b`, two decimal strings, exactly, at the larger of their scales. */
export function sumOf(a: string, b: string): string {
  const [x, y] = [scaledOf(a), scaledOf(b)];
  const scale = Math.max(x.scale, y.scale);
  const at = ({ digits, scale: own }: Scaled) => digits * 10n ** BigInt(scale - own);
  return written({ digits: at(x) + at(y), scale });
}
