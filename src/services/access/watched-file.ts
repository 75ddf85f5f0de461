import { type Stats, unwatchFile, watchFile } from 'node:fs';
import type { Logger } from 'pino';

/**
 * Calls `reload` whenever the stat of `path` changes (polled every `intervalMs`). It watches the
 * path, not an inode, so a file replaced by rename (as editors and `mv` do) is seen like one written
 * in place. A file that is gone, or a `reload` that throws (a file that does not parse), keeps what
 * was last read, logged at error: a half-written or mistyped file never changes who may do what.
 */
export function watchFileToReload(
  path: string,
  reload: () => void,
  logger: Logger,
  names: { file: string; kept: string },
  intervalMs: number,
): { stop(): void } {
  const onChange = (current: Stats) => {
    if (current.mtimeMs === 0 && current.ino === 0) {
      logger.error({ file: path }, `the ${names.file} is gone: keeping the ${names.kept} last read`);
      return;
    }
    try {
      reload();
      logger.info({ file: path }, `${names.file} re-read`);
    } catch (error) {
      logger.error({ err: String(error), file: path }, `the ${names.file} does not parse: keeping the ${names.kept} last read`);
    }
  };
  watchFile(path, { interval: intervalMs, persistent: false }, onChange);
  return { stop: () => unwatchFile(path, onChange) };
}
