import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsIranianIban, NormaliseWith } from '../validation/decorators.js';
import type { RequestHandlingType } from '../inquiry-record.js';
import { RequestHandlingTypeField } from './request-handling-type.field.js';
import { normaliseIban } from '../catalog/validators/iban.js';
import { IBAN_PATTERN } from '../catalog/validators/input-patterns.js';

/**
 * Body of `POST /v1/kyc/iban`. After `validateInquiryRequest` the instance holds the
 * normalised IBAN (`IR` + 24 digits, upper case, no spaces) and `requestHandlingType`
 * defaulted to `standard`.
 */
@ApiSchema({
  name: 'IbanRequest',
  description: 'Who owns this IBAN (شبا)? Unknown fields (including `trackId`) are rejected.',
})
export class IbanRequestDto {
  @ApiProperty({
    type: String,
    // The shape validateInquiryBody accepts; the mod-97 checksum is checked beyond it.
    pattern: IBAN_PATTERN,
    example: 'IR820540102680020817909002',
    description:
      'Iranian IBAN: `IR` followed by 24 digits with a valid ISO 13616 mod-97 checksum. Spaces, lower case and Persian/Arabic-Indic digits are accepted; normalised to upper case without spaces.',
  })
  @NormaliseWith(normaliseIban)
  @IsIranianIban()
  iban!: string;

  @RequestHandlingTypeField()
  requestHandlingType: RequestHandlingType = 'standard';
}
