// The types of build-if-stale.mjs, for its test (test/scripts/build-if-stale.test.ts).

/** A part of the build: the gateway (tsc) or the dashboard (Vite). */
export type PartName = 'gateway' | 'dashboard';

/** Builds a part in `root`; answers the files it bundled from outside the part's own sources, if any. */
export type Builder = (root: string) => string[] | undefined | void | Promise<string[] | undefined | void>;

export const RECORDS: string;

export const PARTS: Record<PartName, { sources: string[]; files: RegExp; made: string; builder: string; build: Builder }>;

export function staleness(root: string, name: PartName): string | undefined;

export function buildIfStale(
  root: string,
  options?: { names?: PartName[]; always?: boolean; builders?: Partial<Record<PartName, Builder>>; log?: (line: string) => void },
): Promise<PartName[]>;
