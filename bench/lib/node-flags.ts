import { readFileSync } from 'node:fs';

/**
 * (Compiled to .build/bench/lib: the Dockerfile is three levels up.)
 * The Node flags the production image starts the gateway with, read from the Dockerfile's
 * `ENV NODE_OPTIONS=` line, so the bench measures what runs in production (docs/operations.md,
 * "Memory").
 */
export const PRODUCTION_NODE_FLAGS =
  /^ENV NODE_OPTIONS="?([^"\n]*)"?$/m.exec(
    readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8'),
  )?.[1] ?? '';

/**
 * The Node flags named by an environment variable (space-separated), or `fallback` when it is
 * unset; an empty value means none.
 */
export function nodeFlagsFrom(variable: string, fallback: string): string[] {
  return (process.env[variable] ?? fallback).split(' ').filter(Boolean);
}
