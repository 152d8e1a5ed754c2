import { applyDecorators } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import type { OpenAPIObject, OperationObject, ParameterObject, SchemaObject } from '@nestjs/swagger';
import type { OperationDefinition, OperationField } from './catalog/operation.js';
import { scopeOf } from './catalog/operation.js';
import { ApiInquiry } from './inquiry.openapi.js';

/** Marks the one handler of the added operations: its entry is a template, written out once per operation. */
const TEMPLATE_MARKER = 'x-vgw-added-operations';
const SCOPE_PLACEHOLDER = 'kyc:{operation}';

/**
 * `POST /v1/kyc/{operation}` in the document: the built-ins' headers, responses and problems
 * (ApiInquiry), as a template that describeAddedOperations turns into one route per operation the
 * catalog adds (docs/api.md §10). With none added, the template leaves no trace: docs/openapi.json
 * is the built-ins' document.
 */
export function ApiAddedInquiry(): MethodDecorator {
  return applyDecorators(
    ApiInquiry({ summary: 'An inquiry the operator added', scope: SCOPE_PLACEHOLDER }),
    ApiExtension(TEMPLATE_MARKER, true),
  );
}

/**
 * The live document of this gateway's catalog, built at start: the template route replaced by
 * `/v1/kyc/{name}` for each added operation (its fields with their type's pattern and example, the
 * entry's description, its scope), and every operation's name in `InquiryOperation`.
 */
export function describeAddedOperations(
  document: OpenAPIObject,
  operations: readonly OperationDefinition[],
): OpenAPIObject {
  const [path, template] =
    Object.entries(document.paths).find(
      ([, item]) => (item.post as Record<string, unknown> | undefined)?.[TEMPLATE_MARKER],
    ) ?? [];
  if (path === undefined || template?.post === undefined) return document;
  delete document.paths[path];
  const schemas = (document.components ??= {}).schemas ?? {};
  for (const operation of operations.filter((candidate) => !candidate.builtIn)) {
    const body = `${operation.name}-request`;
    schemas[body] = requestSchema(operation);
    document.paths[`/v1/kyc/${operation.name}`] = { post: routeOf(template.post, operation, body) };
  }
  const names = schemas.InquiryOperation as SchemaObject | undefined;
  if (names?.enum) names.enum = operations.map((operation) => operation.name);
  return document;
}

/** The template's operation for one name: a copy, so no two routes share an object. */
function routeOf(template: OperationObject, operation: OperationDefinition, body: string): OperationObject {
  const route = structuredClone(template) as OperationObject & Record<string, unknown>;
  delete route[TEMPLATE_MARKER];
  const scope = scopeOf(operation.name);
  route.operationId = `Inquiry_${operation.name}`;
  route.summary = operation.description ?? `The inquiry \`${operation.name}\``;
  route.description = route.description?.replaceAll(SCOPE_PLACEHOLDER, scope);
  route.security = [{ apiKey: [] }, { jwt: [scope] }];
  route.parameters = route.parameters?.filter((parameter) => (parameter as ParameterObject).in !== 'path');
  route.requestBody = {
    required: true,
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${body}` } } },
  };
  return route;
}

/** The body an operation takes: its fields, closed as the built-ins' (unknown fields are refused). */
function requestSchema(operation: OperationDefinition): SchemaObject {
  const handling = operation.advanced ? ['standard', 'advanced'] : ['standard'];
  return {
    type: 'object',
    description: `${operation.description ?? operation.name}. Unknown fields (including \`trackId\`) are rejected.`,
    properties: {
      ...Object.fromEntries(operation.fields.map((field) => [field.name, fieldSchema(field)])),
      requestHandlingType: {
        type: 'string',
        enum: handling,
        default: 'standard',
        example: 'standard',
        description: operation.advanced
          ? 'How the upstream service handles the inquiry; `advanced` needs the `kyc:advanced` scope.'
          : 'How the upstream service handles the inquiry; this operation offers `standard` only.',
      },
    },
    required: operation.fields.filter((field) => !field.optional).map((field) => field.name),
    additionalProperties: false,
  };
}

function fieldSchema(field: OperationField): SchemaObject {
  return {
    type: 'string',
    pattern: field.type.pattern,
    example: field.type.example,
    description:
      `\`${field.declaration.type}\`${field.optional ? ' (optional)' : ''}: ${field.type.expected}. ` +
      'Persian and Arabic-Indic digits are accepted; the value is normalised before it is sent upstream.',
  };
}
