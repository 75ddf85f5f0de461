import type { Kysely } from 'kysely';
import type { DB } from '../../store/tables.js';
import type { Duration } from '../durations/durations.js';

export interface BuildNews {
  build: string;
  kind: 'started' | 'finished' | 'failed';
  module?: string | null;
  at: Date;
}

/**
 * Records build news in order, in one transaction: `started` (re)starts a build, `finished` or
 * `failed` ends it (the first end only) and, when its start was heard, answers its build duration.
 */
export async function recordBuildNews(db: Kysely<DB>, news: readonly BuildNews[]): Promise<Duration[]> {
  if (news.length === 0) return [];
  const ordered = [...news].sort((a, b) => a.at.getTime() - b.at.getTime());
  return db.transaction().execute(async (tx) => {
    const durations: Duration[] = [];
    for (const n of ordered) {
      if (n.kind === 'started') {
        await tx
          .insertInto('build')
          .values({ name: n.build, module: n.module ?? null, state: 'started', started_at: n.at, ended_at: null })
          .onConflict((oc) => oc.column('name').doUpdateSet({ module: n.module ?? null, state: 'started', started_at: n.at, ended_at: null }))
          .execute();
        continue;
      }
      // A build already ended keeps its first end: a repeated finish is not a second duration.
      const ended = await tx
        .insertInto('build')
        .values({ name: n.build, module: n.module ?? null, state: n.kind, started_at: null, ended_at: n.at })
        .onConflict((oc) => oc.column('name').doUpdateSet({ state: n.kind, ended_at: n.at }).where('build.ended_at', 'is', null))
        .returning(['started_at'])
        .executeTakeFirst();
      if (ended?.started_at) {
        const seconds = Math.max(0, (n.at.getTime() - new Date(ended.started_at).getTime()) / 1000);
        durations.push({ kind: 'build', subject: n.build, seconds, heardAt: n.at });
      }
    }
    return durations;
  });
}
