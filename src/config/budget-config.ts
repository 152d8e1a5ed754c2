/**
 * The budgets slice of the configuration (docs/api.md §6, "Budgets"): `BUDGETS` / `BUDGETS_FILE`,
 * `INQUIRY_PRICES`, `BUDGET_TIMEZONE`, `BUDGET_CALENDAR`, `COST_UNIT_PRICE`. Problems name the variable and the
 * entry, never a value. `parseBudgets` is also what a changed `BUDGETS_FILE` goes through.
 */

import type { OperationDefinition } from '../inquiry/catalog/operation.js';

/** The client id that stands for all callers together. */
export const ALL_CALLERS = '*';

export const BUDGET_CALENDARS = ['gregory', 'persian'] as const;
export type BudgetCalendarName = (typeof BUDGET_CALENDARS)[number];

/** One configured budget; a window without a limit is not budgeted. */
export interface BudgetEntry {
  /** A client id, or `*` for all callers together. */
  clientId: string;
  daily?: number;
  monthly?: number;
}

/** Units per operation and handling type (`INQUIRY_PRICES`). */
export type InquiryPriceTable = Record<string, Record<'standard' | 'advanced', number>>;

export const DEFAULT_INQUIRY_PRICES: InquiryPriceTable = {
  shahkar: { standard: 1, advanced: 3 },
  iban: { standard: 1, advanced: 3 },
};

export interface BudgetConfig {
  entries: BudgetEntry[];
  timeZone: string;
  calendar: BudgetCalendarName;
  /** `BUDGETS_FILE`, re-read while running; absent when given inline or not at all. */
  file?: string;
  /** What one cost unit costs (`COST_UNIT_PRICE`); absent: no money is shown, units only. */
  unitPrice?: UnitPrice;
}

/** `COST_UNIT_PRICE`: a decimal amount (a string, never a float) and an ISO 4217 currency code. */
export interface UnitPrice {
  /** `25000`, `0.75`: digits, at most MAX_PRICE_DECIMALS after the point. */
  amount: string;
  /** `IRR`, `EUR`: three capital letters. */
  currency: string;
}

/**
 * The price an inquiry records when it is made (docs/decisions/0015-recorded-unit-price.md):
 * COST_UNIT_PRICE's amount and currency then, both or neither; the ledger entry's `unitPrice`
 * and `currency`.
 */
export interface RecordedPrice {
  unitPrice?: string;
  currency?: string;
}

/** Fractional digits a unit price may have: enough for any currency's minor unit and a fraction of it. */
export const MAX_PRICE_DECIMALS = 6;
const PRICE_FRACTION = `(\\.\\d{1,${MAX_PRICE_DECIMALS}})?`;
/** A configured amount: up to 18 whole digits, at most MAX_PRICE_DECIMALS decimals. */
const PRICE_AMOUNT = new RegExp(`^\\d{1,18}${PRICE_FRACTION}$`);
/** A recorded amount: the same, without leading zeros (canonicalAmount). */
const RECORDED_AMOUNT = new RegExp(`^(0|[1-9]\\d{0,17})${PRICE_FRACTION}$`);
/** An ISO 4217 code. */
const CURRENCY_CODE = /^[A-Z]{3}$/;

/**
 * A record's price as its ledger entry keeps it: only a well-formed pair (what COST_UNIT_PRICE
 * accepts); anything else is left out and the entry reads as unpriced (reported as such, never
 * priced at today's price) rather than parked with all its other facts
 * (test/ledger-parking.integration.spec.ts).
 */
export function recordedPriceOf(record: { unitPrice?: unknown; currency?: unknown }): RecordedPrice | undefined {
  const { unitPrice, currency } = record;
  return typeof unitPrice === 'string' &&
    typeof currency === 'string' &&
    RECORDED_AMOUNT.test(unitPrice) &&
    CURRENCY_CODE.test(currency)
    ? { unitPrice, currency }
    : undefined;
}

/** Largest limit or price accepted: far above any real budget, well inside Lua's exact integers. */
const MAX_UNITS = 1_000_000_000;

const isUnits = (value: unknown, min: number): value is number =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= MAX_UNITS;

/** Parses a BUDGETS document; problems are pushed by entry and field. */
export function parseBudgets(raw: string | undefined, problems: string[]): BudgetEntry[] {
  if (raw === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('BUDGETS: is not valid JSON');
    return [];
  }
  if (!Array.isArray(parsed)) {
    problems.push('BUDGETS: must be a JSON array of {clientId, daily?, monthly?}');
    return [];
  }
  const entries: BudgetEntry[] = [];
  const seen = new Set<string>();
  parsed.forEach((item: unknown, index) => {
    const where = `BUDGETS[${index}]`;
    const entry = item as Partial<Record<keyof BudgetEntry, unknown>> | null;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problems.push(`${where}: must be an object`);
      return;
    }
    const before = problems.length;
    const unknownField = Object.keys(entry).find((field) => !['clientId', 'daily', 'monthly'].includes(field));
    if (unknownField !== undefined) problems.push(`${where}: unknown field (only clientId, daily, monthly)`);
    const { clientId, daily, monthly } = entry;
    // A JWT client id (`azp`) is free text: any printable id up to 256 characters, or `*`.
    if (typeof clientId !== 'string' || !/^[\x21-\x7e]{1,256}$/.test(clientId)) {
      problems.push(`${where}.clientId: must be 1-256 printable ASCII characters, or * for all callers`);
    } else if (seen.has(clientId)) {
      problems.push(`${where}.clientId: has a budget already`);
    }
    if (daily !== undefined && !isUnits(daily, 0)) problems.push(`${where}.daily: must be a whole number of units`);
    if (monthly !== undefined && !isUnits(monthly, 0)) {
      problems.push(`${where}.monthly: must be a whole number of units`);
    }
    if (daily === undefined && monthly === undefined) problems.push(`${where}: needs daily, monthly or both`);
    if (problems.length > before) return;
    seen.add(clientId as string);
    entries.push({
      clientId: clientId as string,
      ...(daily !== undefined ? { daily: daily as number } : {}),
      ...(monthly !== undefined ? { monthly: monthly as number } : {}),
    });
  });
  return entries;
}

/**
 * Parses INQUIRY_PRICES: every operation of the catalog must be priced (at least 1 unit) for
 * `standard`, and for `advanced` when it allows it; a price of an operation not in the catalog
 * is refused (a typo would otherwise leave the real one unpriced).
 */
export function parseInquiryPrices(
  raw: string | undefined,
  operations: readonly Pick<OperationDefinition, 'name' | 'advanced'>[],
  problems: string[],
): InquiryPriceTable {
  const shape = 'must be {"<operation>":{"standard":n,"advanced":n},…} for every operation';
  let table: Record<string, Record<string, unknown> | undefined> = DEFAULT_INQUIRY_PRICES;
  if (raw !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      problems.push('INQUIRY_PRICES: is not valid JSON');
      return DEFAULT_INQUIRY_PRICES;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      problems.push(`INQUIRY_PRICES: ${shape}`);
      return DEFAULT_INQUIRY_PRICES;
    }
    table = parsed as Record<string, Record<string, unknown> | undefined>;
  }
  const prices: InquiryPriceTable = {};
  for (const { name, advanced } of operations) {
    if (!Object.hasOwn(table, name)) {
      problems.push(`INQUIRY_PRICES.${name}: is missing (every operation of the catalog must be priced)`);
      continue;
    }
    const price = { standard: 1, advanced: 1 };
    for (const handling of advanced ? (['standard', 'advanced'] as const) : (['standard'] as const)) {
      const units = table[name]?.[handling];
      if (isUnits(units, 1)) price[handling] = units;
      else problems.push(`INQUIRY_PRICES.${name}.${handling}: must be a whole number of units, at least 1`);
    }
    if (!advanced) price.advanced = price.standard;
    prices[name] = price;
  }
  const known = new Set(operations.map((operation) => operation.name));
  const extra = Object.keys(table).find((operation) => !known.has(operation));
  if (extra !== undefined) problems.push(`INQUIRY_PRICES: ${shape} (an operation not in the catalog is priced)`);
  return prices;
}

/** True when Intl knows the zone (an IANA name such as Asia/Tehran). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses COST_UNIT_PRICE, `{"amount":"25000","currency":"IRR"}`: the amount a decimal string
 * (a JSON number is refused: it would pass through a float), ≥ 0, at most MAX_PRICE_DECIMALS
 * fractional digits; the currency three capital letters (ISO 4217's form).
 */
export function parseUnitPrice(raw: string | undefined, problems: string[]): UnitPrice | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const shape =
    'must be {"amount":"<decimal string>","currency":"<ISO 4217 code>"}, e.g. {"amount":"25000","currency":"IRR"}';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push(`COST_UNIT_PRICE: is not valid JSON; it ${shape}`);
    return undefined;
  }
  const price = parsed as Partial<Record<keyof UnitPrice, unknown>> | null;
  if (typeof price !== 'object' || price === null || Array.isArray(price)) {
    problems.push(`COST_UNIT_PRICE: ${shape}`);
    return undefined;
  }
  const before = problems.length;
  const unknownField = Object.keys(price).find((field) => field !== 'amount' && field !== 'currency');
  if (unknownField !== undefined) problems.push('COST_UNIT_PRICE: unknown field (only amount, currency)');
  if (typeof price.amount !== 'string' || !PRICE_AMOUNT.test(price.amount)) {
    problems.push(
      `COST_UNIT_PRICE.amount: must be a decimal string ≥ 0 with at most ${MAX_PRICE_DECIMALS} fractional digits, such as "25000" or "0.75"`,
    );
  }
  if (typeof price.currency !== 'string' || !CURRENCY_CODE.test(price.currency)) {
    problems.push('COST_UNIT_PRICE.currency: must be an ISO 4217 code of three capital letters, such as IRR');
  }
  if (problems.length > before) return undefined;
  return { amount: canonicalAmount(price.amount as string), currency: price.currency as string };
}

/**
 * A price amount without leading zeros in its whole part (`007.50` is `7.50`; the fraction is
 * kept as written): the form the ledger records and PostgreSQL's numeric reads back unchanged
 * (test/ledger-parking.integration.spec.ts fuzzes the round trip).
 */
export function canonicalAmount(amount: string): string {
  return amount.replace(/^0+(?=\d)/, '');
}

export function budgetConfigFrom(
  vars: { BUDGETS?: string; BUDGET_TIMEZONE: string; BUDGET_CALENDAR: string; COST_UNIT_PRICE?: string },
  file: string | undefined,
  problems: string[],
): BudgetConfig {
  if (!isTimeZone(vars.BUDGET_TIMEZONE)) {
    problems.push('BUDGET_TIMEZONE: must be an IANA time zone name such as UTC or Asia/Tehran');
  }
  const unitPrice = parseUnitPrice(vars.COST_UNIT_PRICE, problems);
  return {
    entries: parseBudgets(vars.BUDGETS, problems),
    timeZone: vars.BUDGET_TIMEZONE,
    calendar: vars.BUDGET_CALENDAR as BudgetCalendarName,
    ...(file !== undefined ? { file } : {}),
    ...(unitPrice !== undefined ? { unitPrice } : {}),
  };
}
