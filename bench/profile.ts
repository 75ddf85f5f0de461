import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * A role's CPU profiler, started and stopped by command, so a profile covers one part of a bench
 * (its deliveries, its queries) and not the process's start. The profile is written to `file`.
 */
export function profilerCommands(): Record<string, (args: Record<string, any>) => Promise<Record<string, any>>> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  return {
    profileStart: async () => {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 200 });
      await post('Profiler.start');
      return {};
    },
    profileStop: async ({ file }) => {
      const { profile } = await post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      return { top: summariseProfile(profile as CpuProfile) };
    },
  };
}

/** The frames of a V8 CPU profile with the most self time, as `share of busy time  ms  function  file:line`. */
export function topFrames(profile: CpuProfile, top = 25): { busyMs: number; frames: string[] } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    if (functionName === '(idle)') return; // shares of the time the process was busy
    const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'}  ${where}`;
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    self.set(key, (self.get(key) ?? 0) + us);
  });
  const frames = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
  return { busyMs: total / 1000, frames };
}

/** `topFrames`, headed by the busy time in all. */
function summariseProfile(profile: CpuProfile): string[] {
  const { busyMs, frames } = topFrames(profile);
  return [`busy ${busyMs.toFixed(0)} ms in all`, ...frames];
}
