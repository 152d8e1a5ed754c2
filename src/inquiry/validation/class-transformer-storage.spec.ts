import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { TransformationType } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import classTransformerPackage from 'class-transformer/package.json' with { type: 'json' };
import { IbanRequestDto } from '../dto/iban-request.dto.js';
import { ShahkarRequestDto } from '../dto/shahkar-request.dto.js';

/**
 * The compiled validation path (inquiry-request.validation.ts) reads class-transformer's
 * metadata from `class-transformer/cjs/storage.js`, a module the package does not document. The
 * differential spec beside it proves the compiled path answers as the libraries do; these pin the
 * private seam itself, so that a release which moves or reshapes it fails here, by name, instead
 * of silently sending every request down the slower library path.
 */
describe("class-transformer's private metadata storage (the seam the compiled validation reads)", () => {
  it('is the version the seam was written against', () => {
    // 0.5.x has been the release line since 2021; a new one must be re-checked against this file.
    expect(classTransformerPackage.version).toMatch(/^0\.5\./);
  });

  it('is the storage the @Transform decorators of the inquiry DTOs write to', () => {
    for (const [dto, fields] of [
      [ShahkarRequestDto, ['nationalCode', 'mobileNumber']],
      [IbanRequestDto, ['iban']],
    ] as const) {
      for (const field of fields) {
        const transforms = defaultMetadataStorage.findTransformMetadatas(dto, field, TransformationType.PLAIN_TO_CLASS);
        expect(transforms).toHaveLength(1);
        expect(typeof transforms[0].transformFn).toBe('function');
      }
    }
  });

  it('answers the questions the compiler asks (exposed, excluded, strategy, nested types)', () => {
    expect(defaultMetadataStorage.getExposedMetadatas(ShahkarRequestDto)).toEqual([]);
    expect(defaultMetadataStorage.getExcludedMetadatas(ShahkarRequestDto)).toEqual([]);
    expect(defaultMetadataStorage.getStrategy(ShahkarRequestDto)).toBe('none');
    expect(defaultMetadataStorage.findTypeMetadata(ShahkarRequestDto, 'nationalCode')).toBeUndefined();
  });
});
