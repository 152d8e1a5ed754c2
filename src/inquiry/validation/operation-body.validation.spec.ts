import { describe, expect, it } from '@jest/globals';
import { defineOperation } from '../catalog/built-in-operations.js';
import type { FieldDeclaration } from '../catalog/operation.js';
import { ProblemException } from '../../problem/problem.js';
import { validateOperationBody } from './operation-body.validation.js';

/** Field names that are also Object.prototype's (the catalog allows them: ^[a-zA-Z][a-zA-Z0-9]*$). */
const fields = JSON.parse(
  '{"constructor":{"type":"text","maxLength":10},"toString":{"type":"digits","minLength":1,"maxLength":2,"optional":true}}',
) as Record<string, FieldDeclaration>;
const operation = defineOperation({
  name: 'proto-names',
  upstreamPath: '/api/v5/KYC/ProtoNames',
  fields,
  advanced: true,
  builtIn: false,
});

const fieldsOfError = (body: unknown) => {
  try {
    validateOperationBody(operation, body);
  } catch (error) {
    return ((error as ProblemException).errors ?? []).map((e) => e.field);
  }
  return [];
};

describe('validateOperationBody with fields named like Object.prototype members', () => {
  it('reads only the body’s own properties: an inherited constructor or toString is no value', () => {
    expect(fieldsOfError({})).toEqual(['constructor']);
  });

  it('keeps a declared constructor field as plain data, the prototype untouched', () => {
    const { fields } = validateOperationBody(operation, JSON.parse('{"constructor":" a ","toString":"1"}'));
    expect(fields).toEqual({ constructor: 'a', toString: '1' });
    expect(Object.getPrototypeOf(fields)).toBe(Object.prototype);
  });
});
