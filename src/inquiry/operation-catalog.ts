import { Injectable, NotFoundException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/app-config.js';
import type { OperationDefinition } from './catalog/operation.js';

/** The live catalog (docs/api.md §10): the built-ins and INQUIRY_OPERATIONS' entries, by name. */
@Injectable()
export class OperationCatalog {
  readonly all: readonly OperationDefinition[];
  private readonly byName: ReadonlyMap<string, OperationDefinition>;

  constructor(config: ConfigService<AppConfig, true>) {
    this.all = config.get('operations', { infer: true });
    this.byName = new Map(this.all.map((operation) => [operation.name, operation]));
  }

  /** An operation the operator added; undefined for a built-in (its own route) or an unknown name. */
  added(name: string): OperationDefinition | undefined {
    const operation = this.byName.get(name);
    return operation && !operation.builtIn ? operation : undefined;
  }
}

/**
 * `POST /v1/kyc/{name}` of a name the catalog lacks is an unknown route (404), before any
 * credential is read, as for any other unknown path: the router's own 404, so that the problem
 * filter names the nearest path (test/http-edges.e2e.spec.ts, "a mistyped path").
 */
@Injectable()
export class KnownOperationGuard implements CanActivate {
  constructor(private readonly catalog: OperationCatalog) {}

  canActivate(context: ExecutionContext): boolean {
    const { operation } = context.switchToHttp().getRequest<FastifyRequest<{ Params: { operation: string } }>>().params;
    if (!this.catalog.added(operation)) throw new NotFoundException();
    return true;
  }
}
