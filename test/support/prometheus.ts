import { spawnSync } from 'node:child_process';

/** One sample of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** `# TYPE` of every metric family. */
  types: Map<string, string>;
  samples: Sample[];
  /** The samples of `name` whose labels include `labels`. */
  find(name: string, labels?: Record<string, string>): Sample[];
  /** The value of the one sample of `name` with exactly these labels (undefined if none). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the text format (as prom-client writes it); throws on a line it cannot read. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name, type);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`unreadable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key] = JSON.parse(`"${value}"`) as string;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  const find = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    types,
    samples,
    find,
    value: (name, labels = {}) =>
      find(name, labels).find((s) => Object.keys(s.labels).length === Object.keys(labels).length)?.value,
  };
}

/**
 * A command of Debian's `prometheus` package, or null when it is not installed. CI installs the
 * package (.ci/run) and sets CI=true: there, its absence is a failure, never a skip.
 */
function prometheusPackageCommand(name: 'promtool' | 'prometheus'): string | null {
  const found = spawnSync(name, ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) {
    if (process.env.CI === 'true') throw new Error(`${name} is required in CI (apt-get install prometheus)`);
    return null;
  }
  return name;
}

/** `promtool`: checks rules and metrics, unit-tests alerts. */
export const promtool = () => prometheusPackageCommand('promtool');

/** The Prometheus server itself. */
export const prometheusServer = () => prometheusPackageCommand('prometheus');

/** Runs promtool with `args` (and `input` on stdin); returns its exit status and output. */
export function runPromtool(args: string[], input?: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { input, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
