import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsIranianMobile, IsIranianNationalCode, NormaliseWith } from '../validation/decorators.js';
import type { RequestHandlingType } from '../inquiry-record.js';
import { RequestHandlingTypeField } from './request-handling-type.field.js';
import { MOBILE_PATTERN, NATIONAL_CODE_PATTERN } from '../catalog/validators/input-patterns.js';
import { normaliseIranianMobile } from '../catalog/validators/mobile.js';
import { normaliseNationalCode } from '../catalog/validators/national-code.js';

/**
 * Body of `POST /v1/kyc/shahkar`. After `validateInquiryRequest` the instance holds the
 * normalised values: `nationalCode` as 10 ASCII digits, `mobileNumber` as `09xxxxxxxxx`,
 * `requestHandlingType` defaulted to `standard`.
 */
@ApiSchema({
  name: 'ShahkarRequest',
  description:
    'Does this mobile number belong to this national code? Unknown fields (including `trackId`) are rejected.',
})
export class ShahkarRequestDto {
  @ApiProperty({
    type: String,
    // The shape validateInquiryBody accepts; the check digit is checked beyond it.
    pattern: NATIONAL_CODE_PATTERN,
    example: '0499370899',
    description:
      'National code (کد ملی): exactly 10 digits with a valid check digit. Persian (۰–۹) and Arabic-Indic (٠–٩) digits are accepted.',
  })
  @NormaliseWith(normaliseNationalCode)
  @IsIranianNationalCode()
  nationalCode!: string;

  @ApiProperty({
    type: String,
    pattern: MOBILE_PATTERN,
    example: '09121234567',
    description:
      'Iranian mobile number: `09xxxxxxxxx`, also accepted as `+989xxxxxxxxx`, `00989xxxxxxxxx`, `989xxxxxxxxx` or `9xxxxxxxxx`; normalised to `09xxxxxxxxx`. Spaces and dashes between the digits, and Persian and Arabic-Indic digits, are accepted.',
  })
  @NormaliseWith(normaliseIranianMobile)
  @IsIranianMobile()
  mobileNumber!: string;

  @RequestHandlingTypeField()
  requestHandlingType: RequestHandlingType = 'standard';
}
