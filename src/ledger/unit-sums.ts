/**
 * Sums of cost units as the aggregates read them. A sum is cast `::bigint` in SQL (an `int`
 * overflows past 2^31 units: three inquiries at the largest price INQUIRY_PRICES accepts), and
 * the engines hand int8 back differently (pg as a string, PGlite as a number or a bigint):
 * `unitSum` reads any of them exactly.
 */
export function unitSum(raw: string | number | bigint): bigint {
  return BigInt(raw);
}

/**
 * A sum of units as the JSON answers write it: a number, exact up to Number.MAX_SAFE_INTEGER
 * (9 × 10^15 units: nine million inquiries at the largest price in one group, so always in
 * practice; test/console-reads.integration.spec.ts, 'sums units past 2^31 exactly in trends,
 * usage and the forecast, and prices them exactly'). Money is computed from the exact sum
 * (moneyOf), never from this number.
 */
export function unitsJson(units: bigint): number {
  return Number(units);
}
