import 'reflect-metadata';
import { afterAll, beforeAll, describe, it, expect } from '@jest/globals';
import { Body, Controller, Headers, HttpCode, Post } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiBody, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import type { ProblemBody } from '../../problem/problem.js';
import { ProblemFilter } from '../../problem/problem.filter.js';
import { IbanRequestDto } from '../dto/iban-request.dto.js';
import { ShahkarRequestDto } from '../dto/shahkar-request.dto.js';
import { validateInquiryRequest } from './inquiry-request.validation.js';

/** A stand-in controller that validates the way the real one does. */
@Controller('v1/kyc')
class EchoController {
  @Post('shahkar')
  @HttpCode(200)
  @ApiBody({ type: ShahkarRequestDto })
  shahkar(@Body() raw: unknown, @Headers('idempotency-key') rawKey?: string) {
    const { body, idempotencyKey } = validateInquiryRequest(ShahkarRequestDto, raw, rawKey);
    return { type: body.constructor.name, body, key: idempotencyKey ?? null };
  }

  @Post('iban')
  @HttpCode(200)
  @ApiBody({ type: IbanRequestDto })
  iban(@Body() raw: unknown) {
    const { body } = validateInquiryRequest(IbanRequestDto, raw, undefined);
    return { type: body.constructor.name, body };
  }
}

describe('inquiry validation over HTTP (Nest + Fastify)', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [EchoController] }).compile();
    app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    app.useGlobalFilters(new ProblemFilter());
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(async () => {
    await app?.close();
  });

  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...headers },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  it('hands the controller a DTO instance with normalised values', async () => {
    const res = await post(
      '/v1/kyc/shahkar',
      { nationalCode: '۰۴۹۹۳۷۰۸۹۹', mobileNumber: '+989121234567' },
      { 'idempotency-key': 'k-1' },
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      type: 'ShahkarRequestDto',
      body: { nationalCode: '0499370899', mobileNumber: '09121234567', requestHandlingType: 'standard' },
      key: 'k-1',
    });
  });

  it('validates and normalises an IBAN request sent without an Idempotency-Key', async () => {
    const res = await post('/v1/kyc/iban', {
      iban: 'ir82 0540 1026 8002 0817 9090 02',
      requestHandlingType: 'advanced',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      type: 'IbanRequestDto',
      body: { iban: 'IR820540102680020817909002', requestHandlingType: 'advanced' },
    });
  });

  it('answers problem+json with one entry per bad field and no raw values', async () => {
    const res = await post('/v1/kyc/shahkar', {
      nationalCode: '0499370898',
      mobileNumber: 9121234567,
      trackId: 'x',
      foo: 1,
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const problem = res.json<ProblemBody>();
    expect(problem).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(problem.errors?.map((e) => e.field)).toEqual(['trackId', 'foo', 'nationalCode', 'mobileNumber']);
    expect(res.body).not.toContain('0499370898');
    expect(res.body).not.toContain('9121234567');
  });

  it('answers 400 for a national code nested 2 000 arrays deep (about 4 KiB), not 500', async () => {
    const res = await post(
      '/v1/kyc/shahkar',
      `{"nationalCode":${'['.repeat(2_000)}"0499370899"${']'.repeat(2_000)},"mobileNumber":"09121234567"}`,
    );
    expect(res.statusCode).toBe(400);
    expect(res.json<ProblemBody>().errors).toEqual([{ field: 'nationalCode', message: 'must be a string' }]);
  });

  it.each(['null', '[]', '"text"', '42'])('rejects the JSON body %s with a `body` entry', async (payload) => {
    const res = await post('/v1/kyc/iban', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json<ProblemBody>().errors).toEqual([{ field: 'body', message: expect.any(String) }]);
  });

  it('rejects a bad Idempotency-Key', async () => {
    const res = await post(
      '/v1/kyc/shahkar',
      { nationalCode: '0499370899', mobileNumber: '09121234567' },
      { 'idempotency-key': 'has space' },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json<ProblemBody>().errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
  });

  it('describes both bodies in OpenAPI with examples and the requestHandlingType enum', () => {
    const doc = SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('t').build());
    const schemas = doc.components?.schemas ?? {};
    const shahkar = schemas['ShahkarRequest'] as {
      required?: string[];
      properties: Record<string, { example?: unknown; enum?: unknown; default?: unknown }>;
    };
    const iban = schemas['IbanRequest'] as typeof shahkar;
    expect(shahkar.required).toEqual(['nationalCode', 'mobileNumber']);
    expect(shahkar.properties.nationalCode.example).toBe('0499370899');
    expect(shahkar.properties.mobileNumber.example).toBe('09121234567');
    expect(shahkar.properties.requestHandlingType).toMatchObject({
      enum: ['standard', 'advanced'],
      default: 'standard',
    });
    expect(iban.required).toEqual(['iban']);
    expect(iban.properties.iban.example).toBe('IR820540102680020817909002');
  });
});
