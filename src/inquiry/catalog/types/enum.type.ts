import { tidy, type FieldType } from '../field-type.js';

/** Bounds of `values` (docs/api.md §10). */
export const ENUM_VALUES = { min: 1, max: 50 } as const;

/** `enum`: one of `values`, compared after NFC and trimming; sent as given in the catalog. */
export function enumType(values: readonly string[]): FieldType {
  const allowed = new Set(values);
  return {
    normalise: tidy,
    accepts: (normalised) => allowed.has(normalised),
    expected: `must be one of: ${values.join(', ')}`,
    pattern: `^\\s*(?:${values.map(escapeForPattern).join('|')})\\s*$`,
    example: values[0],
  };
}

/** ECMA-262's syntax characters and `/` escaped: the only escapes unicode mode (JSON Schema's) allows outside a class. */
function escapeForPattern(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
