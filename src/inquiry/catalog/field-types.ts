import type { FieldType } from './field-type.js';
import type { FieldDeclaration } from './operation.js';
import { cardNumberType } from './types/card-number.type.js';
import { digitsType } from './types/digits.type.js';
import { enumType } from './types/enum.type.js';
import { ibanType } from './types/iban.type.js';
import { mobileType } from './types/mobile.type.js';
import { nationalCodeType } from './types/national-code.type.js';
import { persianDateType } from './types/persian-date.type.js';
import { postalCodeType } from './types/postal-code.type.js';
import { textType } from './types/text.type.js';

/** The type that normalises and checks a declared field (its settings already validated). */
export function fieldTypeOf(declaration: FieldDeclaration): FieldType {
  switch (declaration.type) {
    case 'nationalCode':
      return nationalCodeType;
    case 'mobile':
      return mobileType;
    case 'iban':
      return ibanType;
    case 'cardNumber':
      return cardNumberType;
    case 'postalCode':
      return postalCodeType;
    case 'persianDate':
      return persianDateType;
    case 'digits':
      return digitsType(declaration.minLength ?? 1, declaration.maxLength ?? 64);
    case 'text':
      return textType(declaration.maxLength ?? 200);
    case 'enum':
      return enumType(declaration.values ?? []);
  }
}
