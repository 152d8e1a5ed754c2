import type { FieldError } from '../../problem/problem.js';
import { ProblemException } from '../../problem/problem.js';
import type { OperationDefinition } from '../catalog/operation.js';
import { REQUEST_HANDLING_TYPES, type RequestHandlingType } from '../inquiry-record.js';
import { MESSAGES } from './decorators.js';

const REQUEST_HANDLING_TYPE = 'requestHandlingType';

/** An added operation's body once valid: its normalised fields and the handling asked for. */
export interface OperationBody {
  fields: Record<string, string>;
  requestHandlingType: RequestHandlingType;
}

/**
 * Checks a body against an operation of the catalog (docs/api.md §10) with the built-ins' rules:
 * a JSON object; unknown fields refused one by one (`trackId` with its own message); each
 * declared field a string its type accepts, normalised; `requestHandlingType` standard or
 * advanced, and advanced only where the operation offers it. One error per bad field; messages
 * never hold a value.
 */
export function validateOperationBody(operation: OperationDefinition, body: unknown): OperationBody {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw ProblemException.validation(
      [{ field: 'body', message: 'must be a JSON object' }],
      'The request body must be a JSON object.',
    );
  }
  const given = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  const declared = new Set(operation.fields.map((field) => field.name));
  for (const key of Object.keys(given)) {
    if (!declared.has(key) && key !== REQUEST_HANDLING_TYPE) {
      errors.push({ field: key, message: key === 'trackId' ? MESSAGES.trackId : MESSAGES.unknownField });
    }
  }
  const fields: Record<string, string> = {};
  for (const field of operation.fields) {
    const value = Object.hasOwn(given, field.name) ? given[field.name] : undefined;
    if (value === undefined) {
      if (!field.optional) errors.push({ field: field.name, message: MESSAGES.required });
    } else if (typeof value !== 'string') {
      errors.push({ field: field.name, message: MESSAGES.notString });
    } else {
      const normalised = field.type.normalise(value);
      if (field.type.accepts(normalised)) fields[field.name] = normalised;
      else errors.push({ field: field.name, message: field.type.expected });
    }
  }
  const handling = given[REQUEST_HANDLING_TYPE] ?? 'standard';
  if (!(REQUEST_HANDLING_TYPES as readonly unknown[]).includes(handling)) {
    errors.push({ field: REQUEST_HANDLING_TYPE, message: MESSAGES.requestHandlingType });
  } else if (handling === 'advanced' && !operation.advanced) {
    errors.push({ field: REQUEST_HANDLING_TYPE, message: 'must be standard: this operation does not offer advanced' });
  }
  if (errors.length > 0) throw ProblemException.validation(errors);
  return { fields, requestHandlingType: handling as RequestHandlingType };
}
