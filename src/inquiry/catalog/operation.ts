import type { FieldType } from './field-type.js';

/** The field types of docs/api.md §10, by the names the catalog uses. */
export const FIELD_TYPE_NAMES = [
  'nationalCode',
  'mobile',
  'iban',
  'cardNumber',
  'postalCode',
  'persianDate',
  'digits',
  'text',
  'enum',
] as const;
export type FieldTypeName = (typeof FIELD_TYPE_NAMES)[number];

/** One field as the catalog declares it: its type and the type's own settings. */
export interface FieldDeclaration {
  type: FieldTypeName;
  optional?: true;
  minLength?: number;
  maxLength?: number;
  values?: readonly string[];
}

/** One field of an operation, with the type that normalises and checks its values. */
export interface OperationField {
  name: string;
  declaration: FieldDeclaration;
  optional: boolean;
  type: FieldType;
}

/**
 * An inquiry the gateway offers (docs/api.md §10): its route `POST /v1/kyc/{name}`, its scope
 * `kyc:{name}`, where it is sent upstream and the fields its body takes. The built-ins and the
 * operations the operator adds are definitions of this one kind.
 */
export interface OperationDefinition {
  name: string;
  upstreamPath: string;
  fields: readonly OperationField[];
  /** Whether `requestHandlingType: advanced` may be asked for (with `kyc:advanced`). */
  advanced: boolean;
  description?: string;
  /** Defined in the code (shahkar, iban) rather than by INQUIRY_OPERATIONS. */
  builtIn: boolean;
}

/** An operation's name (docs/api.md §10): also what the ledger's filters accept, as old rows outlive a catalog. */
export const OPERATION_NAME = /^[a-z][a-z0-9-]{1,39}$/;

/** The route template of the operations the operator adds (one handler, the name a parameter). */
export const ADDED_OPERATION_ROUTE = '/v1/kyc/:operation';

/** The route template an operation's requests are labelled with (vgw_http_request_duration_seconds). */
export const routeOf = (operation: Pick<OperationDefinition, 'name' | 'builtIn'>): string =>
  operation.builtIn ? `/v1/kyc/${operation.name}` : ADDED_OPERATION_ROUTE;

/** The scope an operation needs (docs/api.md §1, §10). */
export const scopeOf = (operation: string): `kyc:${string}` => `kyc:${operation}`;
