import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { REQUEST_HANDLING_TYPES, type RequestHandlingType } from '../inquiry-record.js';
import { BUILT_IN_OPERATIONS } from '../catalog/built-in-operations.js';
import type { InquiryOperation } from '../../upstream/inquiry-operation.js';

const UPSTREAM_DATA = {
  type: 'object',
  additionalProperties: true,
  description:
    'The upstream service’s `data`, verbatim (docs/upstream-api.md §2.2; its fields are the provider’s, ' +
    'e.g. `{ "isMatch": true }` for Shahkar).',
} as const;

/** `reusedFrom`, in the 200 answer and in the record read back alike. */
const REUSED_FROM = {
  type: String,
  format: 'uuid',
  description:
    'On a reused answer: the trackId of the inquiry whose answer was reused (docs/api.md §2, "Reusing answers"); ' +
    'left out when another client paid for it (under `share: company`).',
};

/** The 200 answer of both inquiries (docs/api.md §2). */
@ApiSchema({ name: 'InquiryResult', description: 'A successful inquiry.' })
export class InquiryResultDto {
  @ApiProperty({
    type: String,
    format: 'uuid',
    description: 'Stamped by the gateway (UUID v4); also in `X-Track-Id`.',
    example: '3f0c1c9e-8d2a-4c55-9a4e-2b7f1f0c6d11',
  })
  trackId!: string;

  @ApiProperty({ enum: ['succeeded'], description: 'Always `succeeded` on a 200.' })
  status!: 'succeeded';

  @ApiProperty({ ...UPSTREAM_DATA, example: { isMatch: true } })
  data!: Record<string, unknown>;

  @ApiPropertyOptional(REUSED_FROM)
  reusedFrom?: string;
}

/** The 202 answer of an inquiry with `Prefer: respond-async` (docs/api.md §2, "Asynchronous answers"). */
@ApiSchema({
  name: 'InquiryAccepted',
  description: 'Accepted: the inquiry goes on; read its result at `Location`.',
})
export class InquiryAcceptedDto {
  @ApiProperty({ type: String, format: 'uuid', description: 'Stamped by the gateway (UUID v4); also in `X-Track-Id`.' })
  trackId!: string;

  @ApiProperty({ enum: ['pending'], description: 'Always `pending` on a 202.' })
  status!: 'pending';
}

@ApiSchema({ name: 'UpstreamOutcome', description: 'The upstream envelope’s `meta.code` and (masked) `meta.message`.' })
export class UpstreamOutcomeDto {
  @ApiPropertyOptional({ type: 'integer', description: '0 means success.', example: 0 })
  code?: number;

  @ApiPropertyOptional({ type: String, example: 'Success' })
  message?: string;
}

/** `GET /v1/inquiries/{trackId}` (docs/api.md §2). */
@ApiSchema({ name: 'InquiryRecord', description: 'The recorded state of one inquiry.' })
export class InquiryRecordDto {
  @ApiProperty({ type: String, format: 'uuid', example: '3f0c1c9e-8d2a-4c55-9a4e-2b7f1f0c6d11' })
  trackId!: string;

  // The built-ins here (docs/openapi.json); the live document lists the catalog's names
  // (added-operations.openapi.ts).
  @ApiProperty({ enum: BUILT_IN_OPERATIONS.map((operation) => operation.name), enumName: 'InquiryOperation' })
  operation!: InquiryOperation;

  @ApiProperty({
    enum: ['pending', 'succeeded', 'failed', 'unknown'],
    enumName: 'InquiryStatus',
    description:
      '`pending` while the upstream call runs; `unknown` when its outcome could not be learned (a timeout ' +
      'after the request was sent): the upstream may or may not have charged it.',
  })
  status!: 'pending' | 'succeeded' | 'failed' | 'unknown';

  @ApiProperty({ enum: REQUEST_HANDLING_TYPES, enumName: 'RequestHandlingType' })
  requestHandlingType!: RequestHandlingType;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T08:00:00.000Z' })
  createdAt!: string;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'Absent while `pending`.',
    example: '2026-11-22T08:00:00.412Z',
  })
  completedAt?: string;

  @ApiPropertyOptional({ type: () => UpstreamOutcomeDto, description: 'Absent when the upstream never answered.' })
  upstream?: UpstreamOutcomeDto;

  @ApiPropertyOptional({ ...UPSTREAM_DATA, description: `${UPSTREAM_DATA.description} Present once succeeded.` })
  data?: Record<string, unknown>;

  @ApiPropertyOptional(REUSED_FROM)
  reusedFrom?: string;

  @ApiPropertyOptional({
    enum: ['reconciliation', 'tracking'],
    description:
      "On an `unknown` inquiry resolved since: who learned whether it was charged, the provider's list " +
      '(`reconciliation`) or its tracking service (`tracking`, docs/api.md §8). `status` is then `succeeded` ' +
      '(charged) or `failed` (not charged).',
  })
  resolvedBy?: 'reconciliation' | 'tracking';
}
