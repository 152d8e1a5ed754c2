import { fieldTypeOf } from './field-types.js';
import type { FieldDeclaration, OperationDefinition } from './operation.js';

/** A definition from its declared fields, every one required unless it says `optional`. */
export function defineOperation(
  entry: Omit<OperationDefinition, 'fields'> & { fields: Readonly<Record<string, FieldDeclaration>> },
): OperationDefinition {
  const fields = Object.entries(entry.fields).map(([name, declaration]) => ({
    name,
    declaration,
    optional: declaration.optional === true,
    type: fieldTypeOf(declaration),
  }));
  return Object.freeze({ ...entry, fields: Object.freeze(fields) });
}

/** Shahkar (docs/api.md §2): served by its own typed route, `POST /v1/kyc/shahkar`. */
export const SHAHKAR_OPERATION = defineOperation({
  name: 'shahkar',
  upstreamPath: '/api/v5/KYC/CheckShahkar',
  fields: { nationalCode: { type: 'nationalCode' }, mobileNumber: { type: 'mobile' } },
  advanced: true,
  description: 'Whether a mobile number belongs to the holder of a national code (Shahkar)',
  builtIn: true,
});

/** The IBAN inquiry (docs/api.md §2): served by its own typed route, `POST /v1/kyc/iban`. */
export const IBAN_OPERATION = defineOperation({
  name: 'iban',
  upstreamPath: '/api/v5/KYC/IbanInquiry',
  fields: { iban: { type: 'iban' } },
  advanced: true,
  description: 'The holder and bank of an IBAN (Sheba)',
  builtIn: true,
});

/** The two inquiries the gateway has always offered (docs/api.md §2): entries like any other. */
export const BUILT_IN_OPERATIONS: readonly OperationDefinition[] = Object.freeze([SHAHKAR_OPERATION, IBAN_OPERATION]);
