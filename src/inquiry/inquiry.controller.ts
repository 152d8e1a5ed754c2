import { Body, Controller, Get, Headers, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes, requireScope } from '../caller-auth/caller-auth.guard.js';
import { CallerQuotas } from '../caller-auth/caller-quotas.js';
import { TRACK_ID_HEADER } from '../problem/problem.filter.js';
import { IbanRequestDto } from './dto/iban-request.dto.js';
import { ShahkarRequestDto } from './dto/shahkar-request.dto.js';
import { InquiryService, type InquiryRequest, type InquiryResponse } from './inquiry.service.js';
import { validateInquiryRequest } from './validation/inquiry-request.validation.js';

const IDEMPOTENCY_KEY_DOC = {
  name: 'Idempotency-Key',
  required: false,
  description:
    '1–255 visible ASCII characters. A retry with the same key and body replays the first answer without a new charge.',
};

/** `/v1/kyc/*` and `/v1/inquiries/{trackId}` (internal-api.md §2). */
@ApiTags('inquiries')
@ApiSecurity('apiKey')
@ApiSecurity('jwt')
@Controller('v1')
@UseGuards(CallerAuthGuard)
export class InquiryController {
  constructor(
    private readonly inquiries: InquiryService,
    private readonly quotas: CallerQuotas,
  ) {}

  @Post('kyc/shahkar')
  @HttpCode(200)
  @RequireScopes('kyc:shahkar')
  @ApiOperation({ summary: 'Does this mobile number belong to this national code (Shahkar)?' })
  @ApiBody({ type: ShahkarRequestDto })
  @ApiHeader(IDEMPOTENCY_KEY_DOC)
  @ApiOkResponse({
    description:
      '`{ trackId, status: "succeeded", data }` with `X-Track-Id`; data as the upstream sent it (e.g. `{ isMatch }`).',
  })
  @ApiBadRequestResponse({ description: 'problem+json `validation_failed` with one entry per bad field' })
  async shahkar(
    @CurrentCaller() caller: Caller,
    @Body() rawBody: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { body, idempotencyKey } = validateInquiryRequest(ShahkarRequestDto, rawBody, rawKey);
    await this.run(caller, reply, idempotencyKey, {
      operation: 'shahkar',
      route: '/v1/kyc/shahkar',
      requestHandlingType: body.requestHandlingType,
      fields: { nationalCode: body.nationalCode, mobileNumber: body.mobileNumber },
    });
  }

  @Post('kyc/iban')
  @HttpCode(200)
  @RequireScopes('kyc:iban')
  @ApiOperation({ summary: 'IBAN inquiry' })
  @ApiBody({ type: IbanRequestDto })
  @ApiHeader(IDEMPOTENCY_KEY_DOC)
  @ApiOkResponse({
    description: '`{ trackId, status: "succeeded", data }` with `X-Track-Id`; data as the upstream sent it.',
  })
  @ApiBadRequestResponse({ description: 'problem+json `validation_failed` with one entry per bad field' })
  async iban(
    @CurrentCaller() caller: Caller,
    @Body() rawBody: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { body, idempotencyKey } = validateInquiryRequest(IbanRequestDto, rawBody, rawKey);
    await this.run(caller, reply, idempotencyKey, {
      operation: 'iban',
      route: '/v1/kyc/iban',
      requestHandlingType: body.requestHandlingType,
      fields: { iban: body.iban },
    });
  }

  @Get('inquiries/:trackId')
  @RequireScopes('inquiries:read')
  @ApiOperation({ summary: 'The recorded state of one of your inquiries' })
  @ApiOkResponse({
    description: '`{ trackId, operation, status, requestHandlingType, createdAt, completedAt, upstream, data }`',
  })
  async inquiry(
    @CurrentCaller() caller: Caller,
    @Param('trackId') trackId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const view = await this.inquiries.find(caller, trackId);
    reply.header(TRACK_ID_HEADER, view.trackId);
    return view;
  }

  private async run(
    caller: Caller,
    reply: FastifyReply,
    idempotencyKey: string | undefined,
    request: InquiryRequest,
  ): Promise<void> {
    if (request.requestHandlingType === 'advanced') requireScope(caller, 'kyc:advanced');
    await this.quotas.consume(caller);
    send(reply, await this.inquiries.execute(caller, request, idempotencyKey));
  }
}

function send(reply: FastifyReply, response: InquiryResponse): void {
  reply.status(response.status).header('content-type', response.contentType).header(TRACK_ID_HEADER, response.trackId);
  for (const [name, value] of Object.entries(response.headers ?? {})) reply.header(name, value);
  if (response.replayed) reply.header('Idempotent-Replayed', 'true');
  void reply.send(response.body);
}
