/** Plain-text tables for the bench output. */

/** Columns in `leftColumns` are left-aligned, the others (figures) right-aligned. */
export function table(headers: string[], rows: (string | number)[][], leftColumns: readonly number[] = [0]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (leftColumns.includes(i) ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join('\n');
}

export function heading(text: string): string {
  return `\n${text}\n${'='.repeat(text.length)}`;
}

/** Fixed decimals; integers above 1000 grouped for reading. */
export function num(value: number, decimals = 0): string {
  if (!Number.isFinite(value)) return String(value);
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

export const ratio = (value: number, decimals = 2): string => `${num(value, decimals)}x`;

export function signed(value: number, decimals = 1): string {
  return `${value >= 0 ? '+' : ''}${num(value, decimals)}`;
}

export const pct = (value: number, decimals = 1): string => `${num(value * 100, decimals)}%`;
