import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { REQUEST_HANDLING_TYPES } from '../inquiry-record.js';
import { IsRequestHandlingType } from '../validation/decorators.js';

/** `requestHandlingType` of both inquiry bodies: documented and validated in one place. */
export function RequestHandlingTypeField(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      enum: REQUEST_HANDLING_TYPES,
      default: 'standard',
      example: 'standard',
      description: 'How the upstream service handles the inquiry; `advanced` needs the `kyc:advanced` scope.',
    }),
    IsRequestHandlingType(),
  );
}
