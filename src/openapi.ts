import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import {
  ApiExtension,
  DocumentBuilder,
  SwaggerModule,
  type HeaderObject,
  type OpenAPIObject,
  type OperationObject,
  type ParameterObject,
  type ReferenceObject,
  type RequestBodyObject,
  type ResponseObject,
} from '@nestjs/swagger';
import { problemResponse } from './problem/problem.openapi.js';

/**
 * The OpenAPI 3.1 document served at `GET /docs-json` (docs/api.md §4) and committed as
 * docs/openapi.json (`npm run openapi` regenerates it; a test fails when they differ).
 *
 * Operations are described by decorators on the controllers and DTO classes; this file adds
 * what belongs to the whole API: info, servers, security schemes, the headers every response
 * carries, and the routes SwaggerModule itself serves.
 */

export const API_KEY_SCHEME = 'apiKey';
export const JWT_SCHEME = 'jwt';

const PUBLIC_MARKER = 'x-vgw-public';

/** Statuses that Node's HTTP parser can answer itself (src/problem/framework-errors.ts). */
const PARSER_STATUSES = new Set(['400', '408', '431']);

/** Marks an operation that needs no credential: documented with `security: []`. */
export const ApiPublic = () => ApiExtension(PUBLIC_MARKER, true);

/** Response headers shared by several operations, as `components.headers`. */
const HEADERS = {
  'X-Track-Id': {
    description: 'The inquiry’s trackId (UUID v4), once the gateway stamped one.',
    schema: { type: 'string', format: 'uuid' },
  },
  'Idempotent-Replayed': {
    description:
      'Present (`true`) when this answer is the stored answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  Location: {
    description: 'Where the result is read: `/v1/inquiries/{trackId}` (with `Prefer: wait=<seconds>` to wait for it).',
    required: true,
    schema: { type: 'string' },
  },
  'Preference-Applied': {
    description: 'RFC 7240: the `Prefer` preference this answer honoured (`respond-async`, or `wait=<seconds>`).',
    schema: { type: 'string' },
  },
  Age: {
    description:
      'RFC 9111: whole seconds since the reused answer completed, rounded down (only on a reused answer; `0` when ' +
      'it joined an inquiry in flight).',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'Cache-Status': {
    description:
      'RFC 9211, when the caller allowed reuse: `verification-gateway; hit` (a stored answer), `…; fwd=miss; ' +
      'collapsed` (joined an identical inquiry in flight), `…; fwd=stale; fwd-status=<status>` or `…; hit; ' +
      'ttl=-<seconds>` (served under stale-if-error), `…; fwd=miss` or `…; fwd=request` on a fresh answer, plus ' +
      '`; stored` when it was kept for reuse.',
    schema: { type: 'string' },
  },
  'X-Request-Id': {
    description:
      'The request’s id: the caller’s `X-Request-Id` when well formed, a fresh UUID otherwise. Quote it when reporting a problem.',
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:@/+=-]{1,128}$' },
  },
} satisfies Record<string, HeaderObject>;

export type ResponseHeaderName = keyof typeof HEADERS;

/** A `$ref` to a shared response header, optionally marked required for this response. */
export function responseHeader(name: ResponseHeaderName, required = false): HeaderObject | ReferenceObject {
  const shared: HeaderObject = HEADERS[name];
  // A $ref to a header cannot override `required`: when it differs, the header is written out in full.
  return required === (shared.required ?? false) ? { $ref: `#/components/headers/${name}` } : { ...shared, required };
}

/** Request headers every operation accepts, as `components.parameters`. */
const PARAMETERS: Record<string, ParameterObject> = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description:
      'Correlation id chosen by the caller: when it matches the pattern it is echoed in `X-Request-Id` and written ' +
      'in every log line of the request; otherwise the gateway uses a fresh UUID instead.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:@/+=-]{1,128}$' },
  },
};

/** The version in package.json, found by walking up from this file (src/, dist/ or .build/src/). */
function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'verification-gateway' && manifest.version) return manifest.version;
    } catch {
      // no package.json here: go up
    }
    if (dirname(dir) === dir) throw new Error('package.json of verification-gateway not found');
  }
}

const DESCRIPTION = `Internal API in front of the upstream KYC verification service (Shahkar national-code/mobile
check, IBAN inquiry). The gateway holds the upstream credentials and tokens; callers use their own.

- **Callers:** services send \`X-Api-Key\`; apps send \`Authorization: Bearer <JWT>\` from the company's identity
  provider. Each operation names the scope it needs.
- **Errors:** every error is \`application/problem+json\` (RFC 9457) with a stable \`code\`.
- **Safe retries:** send an \`Idempotency-Key\` with an inquiry; a retry with the same key and body gets the stored
  answer (\`Idempotent-Replayed: true\`) and is never charged twice.

The guide is docs/api.md in the gateway's repository; this document is docs/openapi.json there.`;

/** Builds the document from the application's controllers (no listening socket needed). */
export function buildOpenApiDocument(app: NestFastifyApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Verification gateway')
    .setDescription(DESCRIPTION)
    .setVersion(packageVersion())
    .setLicense('Proprietary', 'https://verification-gateway.internal/license')
    // First, so Swagger UI's "Try it out" defaults to it: the gateway that served the page (a
    // relative URL resolves against the document's own address, wherever it is reached).
    .addServer('/', 'This gateway: the address this description was served from')
    .addServer('http://{service}.{namespace}.svc.cluster.local', 'Inside the cluster (the Helm chart’s Service)', {
      service: { default: 'verification-gateway', description: 'The Service name (<release>-verification-gateway)' },
      namespace: { default: 'default', description: 'The Kubernetes namespace' },
    })
    .addServer('http://127.0.0.1:3000', '`npm run sandbox`: the gateway in front of the upstream simulator')
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'X-Api-Key',
        description:
          'For services. A key is configured with its client id and scopes (`API_KEYS`); the scope an ' +
          'operation needs is named in its description.',
      },
      API_KEY_SCHEME,
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'For apps: a JWT from the company’s identity provider. Scopes come from `scope` (space separated) or ' +
          '`scp`: `kyc:shahkar`, `kyc:iban`, `inquiries:read`, `kyc:advanced`. Records, replays and quotas are per ' +
          'end user (`sub`).',
      },
      JWT_SCHEME,
    )
    .addTag('inquiries', 'Shahkar and IBAN inquiries, and the record of each')
    .addTag('operations', 'Probes, metrics and this description; no credential needed')
    .addTag('budgets', "The caller's own spend budgets (docs/api.md §6)")
    .addTag(
      'administration',
      'For operators: the ledger, usage, reconciliations, budgets and status (API keys with the ledger scopes, never a JWT; the ops port when OPS_PORT is set)',
    )
    .build();
  // Operations carry their own tags (`inquiries`, `operations`); without autoTagControllers: false
  // Nest adds the controller's name beside them and Swagger UI lists every operation twice.
  const document = SwaggerModule.createDocument(app, config, { autoTagControllers: false });
  return finishDocument(document);
}

/** What decorators cannot express: shared components, `security: []`, the docs routes themselves. */
function finishDocument(document: OpenAPIObject): OpenAPIObject {
  document.components = {
    ...document.components,
    headers: { ...HEADERS },
    parameters: { ...PARAMETERS },
  };
  document.paths['/docs'] = {
    get: {
      operationId: 'OpenApi_ui',
      summary: 'This description as a web page (Swagger UI)',
      tags: ['operations'],
      security: [],
      responses: { '200': { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  };
  document.paths['/docs-json'] = {
    get: {
      operationId: 'OpenApi_document',
      summary: 'This description (OpenAPI 3.1 JSON)',
      tags: ['operations'],
      security: [],
      responses: {
        '200': {
          description: 'The OpenAPI document.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  };
  // Request bodies are closed: validateInquiryBody rejects every field its DTO does not declare.
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as OperationObject[]) {
      const body = operation?.requestBody as RequestBodyObject | undefined;
      const ref = (body?.content?.['application/json']?.schema as ReferenceObject | undefined)?.$ref;
      const schema = ref ? document.components.schemas?.[ref.replace('#/components/schemas/', '')] : undefined;
      if (schema && !('$ref' in schema)) schema.additionalProperties = false;
    }
  }
  inlineSingleAllOf(document.components.schemas ?? {});
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as OperationObject[]) {
      if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue;
      const marked = operation as OperationObject & Record<string, unknown>;
      if (marked[PUBLIC_MARKER]) {
        delete marked[PUBLIC_MARKER];
        operation.security = [];
      }
      operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/RequestId' }];
      // Node's HTTP parser answers these for any request, before a route is chosen
      // (src/problem/framework-errors.ts).
      operation.responses['408'] = problemResponse(['request_timeout']);
      operation.responses['431'] = problemResponse(['headers_too_large']);
      // Every answer of a route carries X-Request-Id (an onRequest hook, see
      // src/observability/http-observability.ts); the parser's own answers (a 400 for a malformed
      // request, 408, 431) are written before any hook runs, without it.
      for (const [status, response] of Object.entries(operation.responses) as Array<
        [string, ResponseObject | ReferenceObject]
      >) {
        if ('$ref' in response) continue;
        const always = !PARSER_STATUSES.has(status);
        response.headers = { 'X-Request-Id': responseHeader('X-Request-Id', always), ...response.headers };
      }
      operation.responses = Object.fromEntries(
        Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)),
      );
    }
  }
  return document;
}

/**
 * `{ allOf: [{ $ref }], description }` is how the generator attaches a description to a named
 * enum; OpenAPI 3.1 allows `$ref` with siblings, which says the same without a one-element allOf.
 */
function inlineSingleAllOf(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(inlineSingleAllOf);
  if (typeof node !== 'object' || node === null) return;
  const schema = node as Record<string, unknown>;
  const allOf = schema.allOf;
  if (Array.isArray(allOf) && allOf.length === 1 && typeof (allOf[0] as ReferenceObject).$ref === 'string') {
    delete schema.allOf;
    schema.$ref = (allOf[0] as ReferenceObject).$ref;
  }
  Object.values(schema).forEach(inlineSingleAllOf);
}

/** `GET /docs` (UI) and `GET /docs-json` (the document, built at start), docs/api.md §4. */
export function setupOpenApi(app: NestFastifyApplication, document: OpenAPIObject): void {
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', raw: ['json'] });
}
