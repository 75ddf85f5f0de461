import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailable, logJobFailure } from '../../src/kernel/errors.js';
import { isTransientConflict, SQLSTATE, sqlStateOf } from '../../src/kernel/sqlstate.js';
import { isCrossedByAnother, isUniqueViolation } from '../../src/store/db.js';

const failed = (code: unknown) => Object.assign(new Error('statement failed'), { code });
const ADMIN_DATABASE_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('the one SQLSTATE map', () => {
  it('reads a code only when it is a string', () => {
    expect(sqlStateOf(failed('40P01'))).toBe('40P01');
    expect(sqlStateOf(failed(40001))).toBeUndefined();
    expect(sqlStateOf(null)).toBeUndefined();
    expect(sqlStateOf('40001')).toBeUndefined();
  });

  it('a deadlock or a serialization failure is a transient conflict; a unique index violated is crossed, not transient', () => {
    expect(isTransientConflict(failed(SQLSTATE.deadlockDetected))).toBe(true);
    expect(isTransientConflict(failed(SQLSTATE.serializationFailure))).toBe(true);
    expect(isTransientConflict(failed(SQLSTATE.uniqueViolation))).toBe(false);
    expect(isCrossedByAnother(failed(SQLSTATE.uniqueViolation))).toBe(true);
    expect(isCrossedByAnother(failed(SQLSTATE.deadlockDetected))).toBe(true);
    expect(isCrossedByAnother(failed(SQLSTATE.adminShutdown))).toBe(false);
    expect(isUniqueViolation(failed(SQLSTATE.deadlockDetected))).toBe(false);
  });

  it('a server going away is the store unavailable; a statement refused is not', () => {
    for (const code of ['57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']) expect(isStoreUnavailable(failed(code))).toBe(true);
    for (const code of Object.values(SQLSTATE).filter((c) => !c.startsWith('57') && !c.startsWith('08'))) expect(isStoreUnavailable(failed(code))).toBe(false);
  });

  it('a background job failing while the store is away logs a warning without a stack; any other failure is an error', () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const logger = {
      warn: (fields: object, message: string) => lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
      error: (fields: object, message: string) => lines.push({ level: 'error', fields: fields as Record<string, unknown>, message }),
    };
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    logJobFailure(logger, refused, 'sweeping timed-out applies failed');
    logJobFailure(logger, failed(SQLSTATE.uniqueViolation), 'pruning durations failed');
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['warn', 'sweeping timed-out applies failed: the store is unavailable'],
      ['error', 'pruning durations failed'],
    ]);
    expect(lines[0]!.fields.err).toBe('Error: connect ECONNREFUSED 127.0.0.1:5432');
    expect(lines[1]!.fields.err).toBeInstanceOf(Error);
  });

  it('names the codes PostgreSQL itself gives: a unique index violated', async () => {
    const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
    await client.connect();
    try {
      await client.query('create temporary table once (name text primary key)');
      await client.query(`insert into once values ('a')`);
      const error = await client.query(`insert into once values ('a')`).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isUniqueViolation(error)).toBe(true);
      expect(isTransientConflict(error)).toBe(false);
    } finally {
      await client.end();
    }
  });
});
