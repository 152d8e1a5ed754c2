/**
 * Swagger UI at GET /docs, as a developer uses it from the sandbox: each operation listed once
 * (under its own tag, not also under its controller's name) and "Try it out" aimed at the
 * gateway that served the page, not at an in-cluster address the browser cannot reach.
 */
import { describe, expect, it } from '@jest/globals';
import { servedDocument } from './support/served-document.js';

interface OpenApiDocument {
  tags: Array<{ name: string }>;
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, { tags?: string[] }>>;
}

describe('Swagger UI', () => {
  const fixture = servedDocument<OpenApiDocument>();

  it('lists each operation once: one tag per operation, a tag the document declares', () => {
    const declared = fixture.served.tags.map((t) => t.name).sort();
    expect(declared).toEqual(['administration', 'inquiries', 'operations']);
    const operations = Object.entries(fixture.served.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ operation: `${method} ${path}`, tags: op.tags })),
    );
    expect(operations.length).toBeGreaterThan(5);
    for (const { operation, tags } of operations) {
      expect({ operation, tags: tags?.length, known: tags?.every((t) => declared.includes(t)) }).toEqual({
        operation,
        tags: 1,
        known: true,
      });
    }
  });

  it('defaults to the server the page was served from', async () => {
    // Swagger UI selects the first server; a relative one resolves against the document's URL.
    const [first] = fixture.served.servers;
    expect(first.url).toBe('/');
    const docsJson = `${fixture.gateway.url}/docs-json`;
    expect(new URL(first.url, docsJson).origin).toBe(new URL(fixture.gateway.url).origin);
    // The page loads that same document (no absolute address baked into the UI).
    const init = await (await fetch(`${fixture.gateway.url}/docs/swagger-ui-init.js`)).text();
    const servers = init.slice(init.indexOf('"servers"'));
    expect(servers.match(/"url": "([^"]*)"/)?.[1]).toBe('/');
  });
});
