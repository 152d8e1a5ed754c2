import { defineOperation, BUILT_IN_OPERATIONS } from './built-in-operations.js';
import { tidy } from './field-type.js';
import {
  FIELD_TYPE_NAMES,
  OPERATION_NAME as NAME,
  type FieldDeclaration,
  type FieldTypeName,
  type OperationDefinition,
} from './operation.js';
import { DIGITS_LENGTH } from './types/digits.type.js';
import { ENUM_VALUES } from './types/enum.type.js';
import { TEXT_LENGTH } from './types/text.type.js';

/** The limits of INQUIRY_OPERATIONS (docs/api.md §10). */
export const CATALOG_LIMITS = { operations: 50, fields: 20, descriptionLength: 500 } as const;

const UPSTREAM_PATH = /^\/api\/v5\/[A-Za-z0-9_/-]+$/;
const FIELD_NAME = /^[a-zA-Z][a-zA-Z0-9]{0,39}$/;
/**
 * Body fields every inquiry has already: an operation cannot declare them, in any casing (an
 * upstream binding names regardless of case would take a caller's `TrackId` for the stamped one).
 */
const RESERVED_FIELDS = new Set(['trackid', 'requesthandlingtype']);
/** `kyc:advanced` is the scope of advanced handling (docs/api.md §1): no operation's `kyc:{name}`. */
const RESERVED_NAMES = new Set(['advanced']);
const ENTRY_KEYS = new Set(['name', 'upstreamPath', 'fields', 'advanced', 'description']);
/** Each type's own settings, beside `type` and `optional`. */
const SETTINGS: Record<FieldTypeName, readonly string[]> = {
  nationalCode: [],
  mobile: [],
  iban: [],
  cardNumber: [],
  postalCode: [],
  persianDate: [],
  digits: ['minLength', 'maxLength'],
  text: ['maxLength'],
  enum: ['values'],
};

/** A problem of one entry; thrown inside, collected as `INQUIRY_OPERATIONS[i] ("name"): …`. */
class EntryProblem extends Error {}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isWhole = (value: unknown, min: number, max: number): value is number =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/**
 * Parses INQUIRY_OPERATIONS (JSON, or the file INQUIRY_OPERATIONS_FILE names, already read):
 * the built-ins followed by the operator's entries. Each bad entry adds one problem naming the
 * variable, the entry (its index, and its name once that is valid) and what is wrong; values
 * are never echoed beyond a valid name.
 */
export function parseInquiryOperations(raw: string | undefined, problems: string[]): OperationDefinition[] {
  if (raw === undefined) return [...BUILT_IN_OPERATIONS];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('INQUIRY_OPERATIONS: is not valid JSON');
    return [...BUILT_IN_OPERATIONS];
  }
  if (!Array.isArray(parsed)) {
    problems.push('INQUIRY_OPERATIONS: must be a JSON array of operations');
    return [...BUILT_IN_OPERATIONS];
  }
  if (parsed.length > CATALOG_LIMITS.operations) {
    problems.push(`INQUIRY_OPERATIONS: at most ${CATALOG_LIMITS.operations} operations (${parsed.length} given)`);
    return [...BUILT_IN_OPERATIONS];
  }
  const operations = [...BUILT_IN_OPERATIONS];
  const names = new Set(operations.map((operation) => operation.name));
  parsed.forEach((entry: unknown, index) => {
    const label =
      isObject(entry) && typeof entry.name === 'string' && NAME.test(entry.name) ? ` ("${entry.name}")` : '';
    try {
      const operation = parseEntry(entry, names);
      names.add(operation.name);
      operations.push(operation);
    } catch (error) {
      if (!(error instanceof EntryProblem)) throw error;
      problems.push(`INQUIRY_OPERATIONS[${index}]${label}: ${error.message}`);
    }
  });
  return operations;
}

function parseEntry(entry: unknown, names: ReadonlySet<string>): OperationDefinition {
  if (!isObject(entry)) throw new EntryProblem('must be an object');
  const unknown = Object.keys(entry).find((key) => !ENTRY_KEYS.has(key));
  if (unknown !== undefined) throw new EntryProblem(`has an unknown setting (allowed: ${[...ENTRY_KEYS].join(', ')})`);
  const { name, upstreamPath, fields, advanced, description } = entry;
  if (typeof name !== 'string' || !NAME.test(name)) throw new EntryProblem(`name: must match ${NAME.source}`);
  if (names.has(name)) throw new EntryProblem('name: is already taken by a built-in or an earlier entry');
  if (RESERVED_NAMES.has(name))
    throw new EntryProblem(`name: is reserved (kyc:${name} is the scope of ${name} handling)`);
  if (typeof upstreamPath !== 'string' || !UPSTREAM_PATH.test(upstreamPath)) {
    throw new EntryProblem(`upstreamPath: must match ${UPSTREAM_PATH.source}`);
  }
  if (upstreamPath.includes('//') || upstreamPath.includes('..')) {
    throw new EntryProblem('upstreamPath: must not contain // or ..');
  }
  if (advanced !== undefined && typeof advanced !== 'boolean')
    throw new EntryProblem('advanced: must be true or false');
  if (
    description !== undefined &&
    (typeof description !== 'string' || description.length > CATALOG_LIMITS.descriptionLength)
  ) {
    throw new EntryProblem(`description: must be a string of at most ${CATALOG_LIMITS.descriptionLength} characters`);
  }
  return defineOperation({
    name,
    upstreamPath,
    fields: parseFields(fields),
    advanced: advanced ?? true,
    ...(description !== undefined ? { description } : {}),
    builtIn: false,
  });
}

function parseFields(fields: unknown): Record<string, FieldDeclaration> {
  if (!isObject(fields)) throw new EntryProblem('fields: must be an object of field name to { "type": … }');
  const entries = Object.entries(fields);
  if (entries.length < 1 || entries.length > CATALOG_LIMITS.fields) {
    throw new EntryProblem(`fields: must declare 1 to ${CATALOG_LIMITS.fields} fields`);
  }
  const declared: Record<string, FieldDeclaration> = {};
  for (const [field, declaration] of entries) {
    if (!FIELD_NAME.test(field)) throw new EntryProblem(`fields: a field name must match ${FIELD_NAME.source}`);
    if (RESERVED_FIELDS.has(field.toLowerCase()))
      throw new EntryProblem(`fields.${field}: is reserved (the gateway sends it)`);
    declared[field] = parseDeclaration(field, declaration);
  }
  return declared;
}

function parseDeclaration(field: string, declaration: unknown): FieldDeclaration {
  const at = `fields.${field}`;
  if (!isObject(declaration)) throw new EntryProblem(`${at}: must be an object such as { "type": "digits" }`);
  const type = declaration.type as FieldTypeName;
  if (!FIELD_TYPE_NAMES.includes(type))
    throw new EntryProblem(`${at}.type: must be one of ${FIELD_TYPE_NAMES.join(', ')}`);
  const allowed = new Set(['type', 'optional', ...SETTINGS[type]]);
  const extra = Object.keys(declaration).find((key) => !allowed.has(key));
  if (extra !== undefined) throw new EntryProblem(`${at}: a ${type} field takes only ${[...allowed].join(', ')}`);
  if (declaration.optional !== undefined && declaration.optional !== true) {
    throw new EntryProblem(`${at}.optional: must be true when given`);
  }
  const parsed: FieldDeclaration = { type, ...(declaration.optional === true ? { optional: true } : {}) };
  if (type === 'digits') return { ...parsed, ...digitsLengths(at, declaration) };
  if (type === 'text') {
    if (!isWhole(declaration.maxLength, TEXT_LENGTH.min, TEXT_LENGTH.max)) {
      throw new EntryProblem(`${at}.maxLength: must be a whole number from ${TEXT_LENGTH.min} to ${TEXT_LENGTH.max}`);
    }
    return { ...parsed, maxLength: declaration.maxLength };
  }
  if (type === 'enum') return { ...parsed, values: enumValues(at, declaration.values) };
  return parsed;
}

function digitsLengths(at: string, declaration: Record<string, unknown>): { minLength: number; maxLength: number } {
  const { minLength, maxLength } = declaration;
  const range = `a whole number from ${DIGITS_LENGTH.min} to ${DIGITS_LENGTH.max}`;
  if (!isWhole(minLength, DIGITS_LENGTH.min, DIGITS_LENGTH.max))
    throw new EntryProblem(`${at}.minLength: must be ${range}`);
  if (!isWhole(maxLength, DIGITS_LENGTH.min, DIGITS_LENGTH.max))
    throw new EntryProblem(`${at}.maxLength: must be ${range}`);
  if (minLength > maxLength) throw new EntryProblem(`${at}: minLength must not exceed maxLength`);
  return { minLength, maxLength };
}

function enumValues(at: string, values: unknown): string[] {
  const count = `${ENUM_VALUES.min} to ${ENUM_VALUES.max}`;
  if (!Array.isArray(values) || values.length < ENUM_VALUES.min || values.length > ENUM_VALUES.max) {
    throw new EntryProblem(`${at}.values: must be an array of ${count} strings`);
  }
  for (const value of values) {
    // Compared with the caller's value after tidy(): a value tidy() would change could never match.
    if (typeof value !== 'string' || value.length === 0 || value.length > 200 || tidy(value) !== value) {
      throw new EntryProblem(
        `${at}.values: each must be a non-empty string of at most 200 characters, trimmed, NFC, ASCII digits`,
      );
    }
  }
  if (new Set(values).size !== values.length) throw new EntryProblem(`${at}.values: must not repeat a value`);
  return values as string[];
}
