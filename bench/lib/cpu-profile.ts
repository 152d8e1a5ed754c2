/**
 * Summary of a V8 CPU profile (node --cpu-prof): self time by function and by package, within
 * a time window (the measured run, not the start-up).
 */
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time inside the window, ms. */
  sampledMs: number;
  byPackage: { name: string; selfMs: number; share: number }[];
  /**
   * Each sample charged to the nearest frame on its stack that is a package or our own code
   * (node internals and native frames charged to whoever called them): what a package costs
   * with the Node work it causes.
   */
  byResponsiblePackage: { name: string; selfMs: number; share: number }[];
  byFunction: { name: string; where: string; selfMs: number; share: number }[];
}

/** `node_modules/@scope/pkg/…` → `@scope/pkg`; `node:internal/…` → `node (internals)`; our sources by folder. */
export function packageOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(idle)' || functionName === '(program)') return functionName;
    return '(native / V8)';
  }
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith('node:')) return 'node (internals)';
  const own = /\/\.build\/(src|bench|test)\/([^/]+)/.exec(url);
  if (own) return own[1] === 'src' ? `gateway: src/${own[2]}` : `${own[1]}/${own[2]}`;
  return url;
}

export async function summariseProfile(
  file: string,
  window?: { fromUs: number; toUs: number },
  top = 25,
): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  let sampled = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (window && (t < window.fromUs || t > window.toUs)) continue;
    // The sample's duration: the time until the next sample.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
    sampled += dt;
  }
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const isPlatform = (pkg: string) => pkg === 'node (internals)' || pkg === '(native / V8)';
  const responsible = (id: number): string => {
    const own = nodes.get(id)!.callFrame;
    const ownPkg = packageOf(own.url, own.functionName);
    if (!isPlatform(ownPkg)) return ownPkg;
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at)!.callFrame;
      const pkg = packageOf(frame.url, frame.functionName);
      if (!isPlatform(pkg) && pkg !== '(root)') return pkg;
    }
    return 'node (no package on the stack)';
  };
  const byResponsible = new Map<string, number>();
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, { name: string; where: string; us: number }>();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    const pkg = packageOf(url, functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const charged = responsible(id);
    byResponsible.set(charged, (byResponsible.get(charged) ?? 0) + us);
    const where = url ? `${pkg} ${url.split('/').slice(-1)[0]}:${lineNumber + 1}` : pkg;
    const key = `${functionName}@${where}`;
    const entry = byFunction.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    byFunction.set(key, entry);
  }
  const busy = [...byPackage.values()].reduce((a, b) => a + b, 0);
  return {
    sampledMs: sampled / 1000,
    byPackage: [...byPackage]
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: us / busy }))
      .sort((a, b) => b.selfMs - a.selfMs),
    byResponsiblePackage: [...byResponsible]
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: us / busy }))
      .sort((a, b) => b.selfMs - a.selfMs),
    byFunction: [...byFunction.values()]
      .map((f) => ({ name: f.name, where: f.where, selfMs: f.us / 1000, share: f.us / busy }))
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, top),
  };
}
