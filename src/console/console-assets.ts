import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Injectable } from '@nestjs/common';

export interface ConsoleAsset {
  body: Buffer;
  contentType: string;
}

/**
 * Strict: the page runs only its own files (no inline script or style, no other origin), may
 * call only this origin's JSON routes, and may not be framed (docs/operations.md, "The console").
 * The legend's swatches are coloured through the CSSOM (`el.style.…`), which style-src does not govern.
 */
export const CONSOLE_CSP = consoleCsp();

/** With sign-in, the page may also call the identity provider's token endpoint (its origin only). */
export function consoleCsp(tokenEndpoint?: string): string {
  const connect = tokenEndpoint ? `'self' ${new URL(tokenEndpoint).origin}` : "'self'";
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The page's own files (src/console/assets/), by the name they are served under. */
const OWN_FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'reports.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'views.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'format.js': 'text/javascript; charset=utf-8',
  'charts.js': 'text/javascript; charset=utf-8',
  'spend.js': 'text/javascript; charset=utf-8',
  'trends.js': 'text/javascript; charset=utf-8',
  'list.js': 'text/javascript; charset=utf-8',
  'now.js': 'text/javascript; charset=utf-8',
  'sign-in.js': 'text/javascript; charset=utf-8',
  'access.js': 'text/javascript; charset=utf-8',
  'reconcile.js': 'text/javascript; charset=utf-8',
  'webhooks.js': 'text/javascript; charset=utf-8',
  'parked.js': 'text/javascript; charset=utf-8',
};

/** The chart library, from node_modules (a runtime dependency, so the image keeps it). */
const VENDOR_FILES: Record<string, { module: string; contentType: string }> = {
  'vendor/uplot.js': { module: 'uplot/dist/uPlot.esm.js', contentType: 'text/javascript; charset=utf-8' },
  'vendor/uplot.css': { module: 'uplot/dist/uPlot.min.css', contentType: 'text/css; charset=utf-8' },
};

/**
 * Every file of the console, read once at start-up: a missing one fails the start rather than a
 * page later, and no request path ever reaches the file system (a fixed list, no path joining).
 */
@Injectable()
export class ConsoleAssets {
  private readonly files = new Map<string, ConsoleAsset>();

  constructor() {
    const directory = assetDirectory();
    for (const [name, contentType] of Object.entries(OWN_FILES)) {
      this.files.set(name, { body: readFileSync(new URL(name, directory)), contentType });
    }
    const require = createRequire(import.meta.url);
    for (const [name, { module, contentType }] of Object.entries(VENDOR_FILES)) {
      this.files.set(name, { body: readFileSync(require.resolve(module)), contentType });
    }
  }

  get(name: string): ConsoleAsset | undefined {
    return this.files.get(name);
  }
}

/**
 * Beside this module: src/console/assets/ when run from source (tests), dist/console/assets/ in
 * the image (the Dockerfile and `nest build` copy them, tsc compiles TypeScript only). The
 * sandbox's and scripts' .build/src/console/ has no copy: there the source tree's is read.
 */
function assetDirectory(): URL {
  const beside = new URL('./assets/', import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside;
  return new URL('../../../src/console/assets/', import.meta.url);
}
