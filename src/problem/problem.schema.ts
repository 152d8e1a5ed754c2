import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { PROBLEM_STATUS, PROBLEM_TYPE_BASE, type ProblemCode } from './problem.js';

export const PROBLEM_CODES = Object.keys(PROBLEM_STATUS) as ProblemCode[];

/** One bad field of a `validation_failed` (or `upstream_rejected`) problem. */
@ApiSchema({ name: 'FieldError', description: 'One bad field. The message never repeats the submitted value.' })
export class FieldErrorSchema {
  @ApiProperty({
    type: String,
    description: 'The body field, `Idempotency-Key` for the header, or `body` when the body itself is unreadable.',
    example: 'nationalCode',
  })
  field!: string;

  @ApiProperty({ type: String, example: 'must be a 10-digit Iranian national code with a valid check digit' })
  message!: string;
}

/**
 * The OpenAPI description of `ProblemException.toBody()` (docs/api.md §3): every error the
 * gateway answers has this shape, as `application/problem+json` (RFC 9457).
 */
@ApiSchema({
  name: 'Problem',
  description:
    'RFC 9457 problem details. `code` is stable: branch on it, never on `title` or `detail`. ' +
    'Unknown members may be added later; ignore them.',
})
export class ProblemSchema {
  @ApiProperty({
    type: String,
    format: 'uri',
    description: `\`${PROBLEM_TYPE_BASE}\` followed by the code.`,
    example: `${PROBLEM_TYPE_BASE}validation_failed`,
  })
  type!: string;

  @ApiProperty({ type: String, description: 'Short summary of the code; the same for every occurrence.' })
  title!: string;

  @ApiProperty({ type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status.' })
  status!: number;

  @ApiProperty({ enum: PROBLEM_CODES, enumName: 'ProblemCode', description: 'Stable machine-readable code.' })
  code!: ProblemCode;

  @ApiProperty({
    type: String,
    description: 'What happened to this request, in English; never a secret, a stack or a personal identifier.',
  })
  detail!: string;

  @ApiPropertyOptional({
    type: String,
    format: 'uri-reference',
    description: 'RFC 9457 occurrence URI. Not sent by this version: the `trackId` identifies an inquiry.',
  })
  instance?: string;

  @ApiPropertyOptional({
    type: String,
    format: 'uuid',
    description: 'The inquiry this error belongs to, once the gateway stamped one (also in `X-Track-Id`).',
  })
  trackId?: string;

  @ApiPropertyOptional({
    type: () => FieldErrorSchema,
    isArray: true,
    description:
      'Always present for `validation_failed` (one entry per bad field); may be present for `upstream_rejected`.',
  })
  errors?: FieldErrorSchema[];
}
