// How the console writes times, days and money (docs/operations.md, "The console"). Times carry
// their zone; days follow BUDGET_TIMEZONE and BUDGET_CALENDAR (Persian month names and digits
// when `persian`), with UTC a click away; money is exact decimal arithmetic on BigInt, never a float,
// and money spent is what the gateway read from the prices recorded with each inquiry.

/** What the gateway says (GET /admin/forecast) and what the operator chose (the toggles). */
export const display = {
  budgetZone: 'UTC',
  calendar: 'gregory',
  /** The operator's toggle: every time and day in UTC, Gregorian. */
  utc: false,
  /** COST_UNIT_PRICE, when set: `{ amount: '25000', currency: 'IRR' }`. */
  price: null,
  /** Rials shown as tomans (rials / 10), the everyday Iranian convention. */
  tomans: false,
};

export const zone = () => (display.utc ? 'UTC' : display.budgetZone);
const persian = () => display.calendar === 'persian' && !display.utc;
const locale = () => (persian() ? 'fa-IR-u-ca-persian' : 'en-GB');

/** An instant with its zone named: `24 Nov 2026, 13:05:09 GMT+3:30`. */
export function timeText(iso, withSeconds = true) {
  return new Intl.DateTimeFormat(locale(), {
    timeZone: zone(),
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    ...(withSeconds ? { second: '2-digit' } : {}),
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(new Date(iso));
}

/** A civil day `2026-03-21` (already in the zone it was counted in) on the calendar: `۱ فروردین ۱۴۰۵`. */
export function dayText(day, short = false) {
  return new Intl.DateTimeFormat(locale(), {
    timeZone: 'UTC',
    ...(short ? { month: 'short', day: 'numeric' } : { year: 'numeric', month: 'long', day: 'numeric' }),
  }).format(new Date(`${day}T12:00:00Z`));
}

/** The civil date of an instant in the zone shown: `2026-03-21`. */
export function dayOf(instant) {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone(),
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  })
    .formatToParts(new Date(instant))
    .reduce((all, part) => ({ ...all, [part.type]: part.value }), {});
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/** `2026-03-21` plus `days` (calendar arithmetic on civil dates, no zone involved). */
export function addDays(day, days) {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

// ---- Money: decimal strings, exact

function scaled(decimal) {
  const [whole, fraction = ''] = String(decimal).split('.');
  return { digits: BigInt(whole + fraction), scale: fraction.length };
}

function written(digits, scale) {
  const text = digits.toString().padStart(scale + 1, '0');
  return scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
}

/** `units` × the price of one unit, exactly, as a decimal string at the price's scale. */
export function amountOf(units, price = display.price) {
  const { digits, scale } = scaled(price.amount);
  return written(digits * BigInt(units), scale);
}

/** A decimal string divided by 10, exactly: rials to tomans. */
function tenth(decimal) {
  const { digits, scale } = scaled(decimal);
  return written(digits, scale + 1)
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}

/** Thousands separators on the whole part: `1234567.5` → `1,234,567.5`. */
export function grouped(decimal) {
  const [whole, fraction] = decimal.split('.');
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction ? `${withCommas}.${fraction}` : withCommas;
}

/** `a` + `b`, two decimal strings, exactly, at the larger scale. */
export function addAmounts(a, b) {
  const [x, y] = [scaled(a), scaled(b)];
  const scale = Math.max(x.scale, y.scale);
  return written(x.digits * 10n ** BigInt(scale - x.scale) + y.digits * 10n ** BigInt(scale - y.scale), scale);
}

/** An amount as the gateway read it (a decimal string) in its currency: `75,000 IRR`, `7,500 toman`. */
export function amountText(amount, currency) {
  if (currency === 'IRR' && display.tomans) return `${grouped(tenth(amount))} toman`;
  return `${grouped(amount)} ${currency}`;
}

/**
 * `units` at TODAY's price (COST_UNIT_PRICE), in the chosen unit; '' when no price is configured.
 * Only for what lies ahead (the month's projection) and the price line: money spent is read as
 * recorded (`spentAmount`, or an entry's own `unitPrice`), never priced here.
 */
export function moneyText(units) {
  if (!display.price) return '';
  return amountText(amountOf(units), display.price.currency);
}

/** An entry's spent units at the price it recorded (`unitPrice`, `currency`): '' without a configured price; a note without a recorded one. */
export function recordedMoneyText(units, entry) {
  if (!display.price) return '';
  if (entry.unitPrice === undefined) return 'no price recorded';
  return amountText(amountOf(units, { amount: entry.unitPrice }), entry.currency);
}

/** Units in plain digits with separators. */
export const unitsText = (units) => grouped(String(units));

const ZERO = /^0(\.0+)?$/;

/**
 * Usage or trends rows' money summed per client (or all together): `spent` and `saved` in today's
 * currency (a usage row's `currency`, else the answer's: `currency`), the units no price was
 * recorded for, and other currencies' amounts apart (never converted). Empty without
 * COST_UNIT_PRICE (the rows carry no money then).
 */
export function recordedMoney(rows, currency = undefined) {
  const byClient = new Map();
  const add = (sum, row) => {
    sum.currency = row.currency ?? currency;
    sum.spent = addAmounts(sum.spent, row.spentAmount);
    sum.saved = addAmounts(sum.saved, row.savedAmount ?? '0');
    sum.unpriced.spent += row.unpricedUnits ?? 0;
    sum.unpriced.saved += row.unpricedSavedUnits ?? 0;
    for (const other of row.otherCurrencies ?? []) {
      const before = sum.others.get(other.currency) ?? { spent: '0', saved: '0' };
      sum.others.set(other.currency, {
        spent: addAmounts(before.spent, other.spentAmount),
        saved: addAmounts(before.saved, other.savedAmount ?? '0'),
      });
    }
  };
  const empty = () => ({ spent: '0', saved: '0', unpriced: { spent: 0, saved: 0 }, others: new Map() });
  const all = empty();
  for (const row of rows) {
    if (row.spentAmount === undefined) continue;
    if (!byClient.has(row.clientId)) byClient.set(row.clientId, empty());
    add(byClient.get(row.clientId), row);
    add(all, row);
  }
  return { byClient, all: all.currency ? all : undefined };
}

/**
 * `sum`'s spent or saved money, a line each: today's currency, other currencies (not converted),
 * and the units recorded without a price (never priced here).
 */
export function recordedLines(sum, which) {
  if (!sum) return [];
  const others = [...sum.others]
    .filter(([, amounts]) => !ZERO.test(amounts[which]))
    .map(([currency, amounts]) => `+ ${amountText(amounts[which], currency)}`);
  const unpriced = sum.unpriced[which];
  return [
    amountText(sum[which], sum.currency),
    ...others,
    ...(unpriced ? [`+ ${unitsText(unpriced)} units unpriced`] : []),
  ];
}
