import {
  registerDecorator,
  type ValidationArguments,
  type ValidationOptions,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { Transform } from 'class-transformer';
import { ibanType } from '../catalog/types/iban.type.js';
import { mobileType } from '../catalog/types/mobile.type.js';
import { nationalCodeType } from '../catalog/types/national-code.type.js';
import { normaliseIban } from '../catalog/validators/iban.js';
import { normaliseIranianMobile } from '../catalog/validators/mobile.js';
import { normaliseNationalCode } from '../catalog/validators/national-code.js';
import { REQUEST_HANDLING_TYPES, type RequestHandlingType } from '../inquiry-record.js';

/**
 * Field validators for the inquiry bodies.
 *
 * Each decorator is ONE class-validator constraint that checks presence, type and value
 * together, so a bad field always yields exactly one message, and that message is chosen
 * from the kind of failure only: the submitted value is never echoed (it may be a national
 * code, a phone number or an IBAN).
 */

export const MESSAGES = {
  required: 'is required',
  notString: 'must be a string',
  nationalCode: nationalCodeType.expected,
  mobile: mobileType.expected,
  iban: ibanType.expected,
  requestHandlingType: `must be one of: ${REQUEST_HANDLING_TYPES.join(', ')}`,
  unknownField: 'is not allowed',
  trackId: 'may not be sent; the gateway stamps the trackId',
} as const;

type Normaliser = (input: string) => string | null;

/** A required string field whose value is valid when `normalise` accepts it. */
function stringConstraint(normalise: Normaliser, invalidMessage: string): ValidatorConstraintInterface {
  return {
    validate: (value: unknown) => typeof value === 'string' && normalise(value) !== null,
    defaultMessage: (args?: ValidationArguments) => {
      const value: unknown = args?.value;
      if (value === undefined) return MESSAGES.required;
      if (typeof value !== 'string') return MESSAGES.notString;
      return invalidMessage;
    },
  };
}

function register(
  name: string,
  constraint: ValidatorConstraintInterface,
  options?: ValidationOptions,
): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: constraint,
    });
  };
}

/**
 * Replaces a string by its normalised form when the normaliser accepts it; anything else
 * (wrong type, invalid value) is left as it was so that the validator reports it. The
 * normalisers are idempotent, so validating the normalised value gives the same verdict as
 * validating the raw one: in effect the DTO holds the normalised value exactly when it is valid.
 */
export function NormaliseWith(normalise: Normaliser): PropertyDecorator {
  return Transform(({ value }: { value: unknown }) => {
    if (typeof value !== 'string') return value;
    return normalise(value) ?? value;
  });
}

/** Required; a 10-digit national code with a valid check digit (Persian/Arabic digits accepted). */
export function IsIranianNationalCode(options?: ValidationOptions): PropertyDecorator {
  return register('isIranianNationalCode', stringConstraint(normaliseNationalCode, MESSAGES.nationalCode), options);
}

/** Required; an Iranian mobile number in any of the accepted spellings. */
export function IsIranianMobile(options?: ValidationOptions): PropertyDecorator {
  return register('isIranianMobile', stringConstraint(normaliseIranianMobile, MESSAGES.mobile), options);
}

/** Required; an Iranian IBAN with a valid mod-97 checksum (spaces and lower case accepted). */
export function IsIranianIban(options?: ValidationOptions): PropertyDecorator {
  return register('isIranianIban', stringConstraint(normaliseIban, MESSAGES.iban), options);
}

export function isRequestHandlingType(value: unknown): value is RequestHandlingType {
  return typeof value === 'string' && (REQUEST_HANDLING_TYPES as readonly string[]).includes(value);
}

/**
 * Optional: absent is fine (the DTO's default, `standard`, applies). Present means it must be
 * exactly `standard` or `advanced` (case-sensitive); `null` or any other type is refused.
 */
export function IsRequestHandlingType(options?: ValidationOptions): PropertyDecorator {
  return register(
    'isRequestHandlingType',
    {
      validate: (value: unknown) => value === undefined || isRequestHandlingType(value),
      defaultMessage: () => MESSAGES.requestHandlingType,
    },
    options,
  );
}
