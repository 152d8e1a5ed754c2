import { Controller, Get, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { isUUID } from 'class-validator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes, requireScope } from '../caller-auth/caller-auth.guard.js';
import { CallerQuotas } from '../caller-auth/caller-quotas.js';
import { requestFacts } from '../observability/http-observability.js';
import { ProblemException } from '../problem/problem.js';
import { parseCacheControl } from '../reuse/cache-control.js';
import {
  CACHE_CONTROL_HEADER_IN,
  IDEMPOTENCY_KEY_HEADER_IN,
  IDEMPOTENT_REPLAYED_HEADER,
  PREFERENCE_APPLIED_HEADER,
  PREFER_HEADER_IN,
  TRACK_ID_HEADER,
} from '../vocabulary/headers.js';
import { parsePrefer } from './prefer.js';
import { IbanRequestDto } from './dto/iban-request.dto.js';
import { ShahkarRequestDto } from './dto/shahkar-request.dto.js';
import type { StoredResponse } from './inquiry-record.js';
import { ApiInquiry, ApiInquiryRecord } from './inquiry.openapi.js';
import { ApiAddedInquiry } from './added-operations.openapi.js';
import type { AsyncPreference, InquiryRequest, InquiryResponse } from './inquiry-in-flight.js';
import { InquiryReads } from './inquiry-reads.js';
import { InquiryService } from './inquiry.service.js';
import {
  ValidInquiry,
  checkJsonMediaType,
  withIdempotencyKey,
  type ValidInquiryInput,
} from './validation/inquiry-request.validation.js';
import { validateOperationBody } from './validation/operation-body.validation.js';
import { KnownOperationGuard, OperationCatalog } from './operation-catalog.js';
import { scopeOf, type OperationDefinition } from './catalog/operation.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * `/v1/kyc/*` and `/v1/inquiries/{trackId}` (docs/api.md §2).
 *
 * Every handler writes its reply itself (`@Res()`), through `send`: an inquiry's status and
 * headers come from its outcome (a replay repeats a stored 502 or 504 with its headers), and
 * Nest's return-value path always sets the route's fixed status. One writer for all three
 * keeps `X-Track-Id` and the content type the same everywhere.
 */
@Controller('v1')
export class InquiryController {
  constructor(
    private readonly inquiries: InquiryService,
    private readonly reads: InquiryReads,
    private readonly quotas: CallerQuotas,
    private readonly catalog: OperationCatalog,
  ) {}

  @Post('kyc/shahkar')
  @UseGuards(CallerAuthGuard)
  @RequireScopes('kyc:shahkar')
  @ApiInquiry({
    summary: 'Does this mobile number belong to this national code (Shahkar)?',
    scope: 'kyc:shahkar',
    body: ShahkarRequestDto,
  })
  shahkar(
    @CurrentCaller() caller: Caller,
    @ValidInquiry(ShahkarRequestDto) { body: dto, idempotencyKey }: ValidInquiryInput<ShahkarRequestDto>,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    return this.inquire(caller, request, reply, idempotencyKey, {
      operation: 'shahkar',
      route: '/v1/kyc/shahkar',
      requestHandlingType: dto.requestHandlingType,
      fields: { nationalCode: dto.nationalCode, mobileNumber: dto.mobileNumber },
    });
  }

  @Post('kyc/iban')
  @UseGuards(CallerAuthGuard)
  @RequireScopes('kyc:iban')
  @ApiInquiry({ summary: 'Who owns this IBAN?', scope: 'kyc:iban', body: IbanRequestDto })
  iban(
    @CurrentCaller() caller: Caller,
    @ValidInquiry(IbanRequestDto) { body: dto, idempotencyKey }: ValidInquiryInput<IbanRequestDto>,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    return this.inquire(caller, request, reply, idempotencyKey, {
      operation: 'iban',
      route: '/v1/kyc/iban',
      requestHandlingType: dto.requestHandlingType,
      fields: { iban: dto.iban },
    });
  }

  /**
   * Every operation the operator adds (docs/api.md §7): one route, the name a parameter. A name
   * not in the catalog is 404 before authentication (KnownOperationGuard); then its scope
   * `kyc:{name}`, its fields checked by their types, and the built-ins' steps.
   */
  @Post('kyc/:operation')
  @UseGuards(KnownOperationGuard, CallerAuthGuard)
  @ApiAddedInquiry()
  added(
    @CurrentCaller() caller: Caller,
    @Param('operation') name: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const operation = this.catalog.added(name) as OperationDefinition;
    requireScope(caller, scopeOf(operation.name));
    checkJsonMediaType(request.body, request.headers['content-type']);
    const { body, idempotencyKey } = withIdempotencyKey(
      () => validateOperationBody(operation, request.body),
      request.headers[IDEMPOTENCY_KEY_HEADER_IN],
    );
    return this.inquire(caller, request, reply, idempotencyKey, {
      operation: operation.name,
      route: `/v1/kyc/${operation.name}`,
      ...body,
    });
  }

  @Get('inquiries/:trackId')
  @UseGuards(CallerAuthGuard)
  @RequireScopes('inquiries:read')
  @ApiInquiryRecord()
  async inquiry(
    @CurrentCaller() caller: Caller,
    @Param('trackId') trackId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    // One rule for a malformed trackId everywhere (docs/api.md §3): 400, as /admin/ledger?trackId=
    // answers; a well-formed one that is not the caller's is 404.
    if (!isUUID(trackId)) throw malformedTrackId();
    // `Prefer: wait=<s>`: hold the answer until the record settles (docs/api.md, "Asynchronous answers").
    const { waitSeconds } = parsePrefer(request.headers[PREFER_HEADER_IN]);
    // A caller that hangs up mid-wait frees its slot (INQUIRY_MAX_HELD_WAITS) at once.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const { view, waitedSeconds } = await this.reads.find(caller, trackId, (waitSeconds ?? 0) * 1000, gone.signal);
    const headers = waitedSeconds !== undefined ? { [PREFERENCE_APPLIED_HEADER]: `wait=${waitSeconds}` } : undefined;
    send(reply, { status: 200, contentType: JSON_CONTENT_TYPE, trackId: view.trackId, body: view, headers });
  }

  /**
   * The steps both inquiries share, once their input is valid (`@ValidInquiry`): check the
   * `kyc:advanced` scope (it depends on the body), read `Cache-Control` (400 naming it when
   * malformed: validation, before the quota), count the quota (only well-formed inquiries
   * count), run the inquiry (asynchronously with `Prefer: respond-async`), reply.
   */
  private async inquire(
    caller: Caller,
    request: FastifyRequest,
    reply: FastifyReply,
    idempotencyKey: string | undefined,
    inquiry: InquiryRequest,
  ): Promise<void> {
    if (inquiry.requestHandlingType === 'advanced') requireScope(caller, 'kyc:advanced');
    // Without the header nothing of reuse runs (docs/performance.md).
    const cacheControl = request.headers[CACHE_CONTROL_HEADER_IN];
    const directives = cacheControl === undefined ? undefined : parseCacheControl(cacheControl);
    await this.quotas.consume(caller, inquiry.operation);
    const prefer = parsePrefer(request.headers[PREFER_HEADER_IN]);
    const async = prefer.respondAsync ? asyncPreference(reply, prefer.waitSeconds) : undefined;
    send(
      reply,
      await this.inquiries.execute(caller, inquiry, idempotencyKey, requestFacts(request), async, directives),
    );
  }
}

/** A path segment that cannot be a trackId: the gateway's trackIds are UUIDs (its X-Track-Id answers). */
function malformedTrackId(): ProblemException {
  return ProblemException.validation(
    [{ field: 'trackId', message: 'must be a UUID, as in the X-Track-Id of an inquiry answer' }],
    'trackId must be a UUID.',
  );
}

function send(reply: FastifyReply, response: StoredResponse | InquiryResponse): void {
  reply.status(response.status).header('content-type', response.contentType).header(TRACK_ID_HEADER, response.trackId);
  for (const [name, value] of Object.entries(response.headers ?? {})) reply.header(name, value);
  if ('replayed' in response && response.replayed) reply.header(IDEMPOTENT_REPLAYED_HEADER, 'true');
  void reply.send(response.body);
}

/**
 * `Prefer: respond-async`'s wait, with the signal of the caller hanging up: a keyed retry held
 * on an in-flight request frees its slot at once then, as a long-poll does
 * (INQUIRY_MAX_HELD_WAITS). Made only for such a caller: for any other the signal and its
 * listener would be work per inquiry with no use.
 */
function asyncPreference(reply: FastifyReply, waitSeconds: number | undefined): AsyncPreference {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return { waitMs: (waitSeconds ?? 0) * 1000, gone: gone.signal };
}
