import pino, { type Logger } from 'pino';

/** One JSON logger for the process; tests pass `silent`. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'mesh-gateway' } });
}
