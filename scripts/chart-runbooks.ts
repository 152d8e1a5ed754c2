/**
 * Copies each alert's runbook (a `## <AlertName>` section of docs/runbooks.md) into the
 * chart as files/runbooks.yaml. A chart cannot read files outside itself, and an alert whose
 * runbook_url points nowhere helps no one on call: without prometheusRule.runbookBaseUrl the
 * PrometheusRule carries these steps in each alert's `runbook` annotation.
 *   npm run chart:runbooks            rewrite helm/verification-gateway/files/runbooks.yaml
 *   npm run chart:runbooks -- --check exit 1 when it no longer matches docs/runbooks.md
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(here, here.includes(`${sep}.build${sep}`) ? '../..' : '..');
export const RUNBOOKS_MD = join(ROOT, 'docs', 'runbooks.md');
export const RUNBOOKS_YAML = join(ROOT, 'helm', 'verification-gateway', 'files', 'runbooks.yaml');

/** Alert name → its runbook section's text (sections whose title is one word: the alerts). */
export function runbookSections(markdown: string): Record<string, string> {
  const sections: Record<string, string> = {};
  for (const part of markdown.split(/^## /m).slice(1)) {
    const [title, ...body] = part.split('\n');
    if (!/^[A-Z][A-Za-z0-9]+$/.test(title.trim())) continue;
    sections[title.trim()] = body.join('\n').trim();
  }
  return sections;
}

export function runbooksYaml(markdown: string): string {
  return (
    '# Generated from docs/runbooks.md by scripts/chart-runbooks.ts (npm run chart:runbooks): do not edit.\n' +
    stringify(runbookSections(markdown), { lineWidth: 0 })
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const next = runbooksYaml(readFileSync(RUNBOOKS_MD, 'utf8'));
  if (process.argv.includes('--check')) {
    if (readFileSync(RUNBOOKS_YAML, 'utf8') !== next) {
      process.stderr.write(`${RUNBOOKS_YAML} is stale: run npm run chart:runbooks\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(RUNBOOKS_YAML, next);
  }
}
