import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/**
 * One logger for the process; tests pass `silent`. `format` (LOG_FORMAT) unset: readable lines, one per event,
 * when stdout is a terminal (a person is reading), JSON lines otherwise (a collector is).
 * Pretty lines are written synchronously, so nothing logged just before an exit is lost.
 */
export function createLogger(level: string, format?: 'json' | 'pretty'): Logger {
  const options = { level, base: { service: 'mesh-gateway' } };
  if ((format ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'json') return pino(options);
  return pino(
    options,
    pretty({ sync: true, singleLine: true, colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }),
  );
}
