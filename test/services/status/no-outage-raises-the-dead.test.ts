import { afterEach, describe, expect, test, vi } from 'vitest';
import { Pacer } from '../../../src/kernel/pacer.js';
import { type DeafSpan, type Judging, machineState } from '../../../src/services/machines/machines.js';
import { type HearingSource, startNewsHearing } from '../../../src/services/news/hearing.js';
import { MeshView } from '../../../src/services/status/composing/incremental.js';
import type { MachineStatus } from '../../../src/services/status/composition.js';

// No outage raises the dead: a deaf span learned late (a replica frozen or too busy to read when
// NATS restarted) may delay LATE and SILENT, never turn a SILENT machine LATE or UP again. The
// issue's scenario at 2 s heartbeats (LATE past 3 s of heard news, SILENT past 12 s): ten machines
// stop at L; replica B freezes at L + 1 s, its last read; A shows them SILENT at L + 13 s; NATS is
// restarted at L + 20 s; B resumes at L + 30 s, reconnects at L + 31 s and takes over.
const HEARTBEAT_S = 2;
const L = Date.parse('2026-12-03T07:16:30Z');
const s = (seconds: number) => L + seconds * 1000;
const at = (heardUntilMs: number, deaf: readonly DeafSpan[] = []): Judging => ({ heardUntilMs, heartbeatSeconds: HEARTBEAT_S, deaf });

/** A NATS connection whose status events the test sends. */
function aConnection() {
  const queue: { type: string }[] = [];
  let wake: (() => void) | undefined;
  const statuses: AsyncIterable<{ type: string }> & { stop(): void } = {
    stop() {},
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length) yield queue.shift()!;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  return {
    nc: { status: () => statuses } as unknown as HearingSource['nc'],
    async send(type: string) {
      queue.push({ type });
      wake?.();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a deaf span learned late', () => {
  test('never reaches back past states another replica already showed: B, frozen while A showed the machines SILENT, does not judge them LATE or UP', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(s(1));
    let answers = true;
    const source: HearingSource = {
      stream: 'news',
      jsm: {
        streams: { info: async () => (answers ? { state: { first_seq: 0, last_seq: 0 } } : Promise.reject(new Error('frozen'))) },
      } as unknown as HearingSource['jsm'],
      ...aConnection(),
    };
    const connection = aConnection();
    source.nc = connection.nc;
    const hearing = startNewsHearing(source, s(0));
    await hearing.refresh(); // B's last read before it froze: L + 1 s
    answers = false;
    vi.setSystemTime(s(30)); // B resumes: its connection went away while it was frozen
    await connection.send('disconnect');
    vi.setSystemTime(s(31));
    await connection.send('reconnect');
    // B's follower catches up on A's compositions, made before B heard again.
    hearing.shown(s(13), s(13));
    hearing.shown(s(19), s(19));
    const deaf = hearing.current().deaf;
    expect(deaf).toEqual([{ fromMs: s(19), toMs: s(31) }]);
    for (const heardUntil of [s(31), s(32), s(34), s(40), s(60)]) expect(machineState(L, at(heardUntil, deaf))).toBe('SILENT');
    // A machine A showed UP at L + 19 s (beating until L + 18 s) still has its grace after the span.
    expect(machineState(s(18), at(s(32), deaf))).toBe('UP');
    hearing.stop();
  });

  test('a composition made after the span ended changes nothing of it', async () => {
    const { shownStates } = await import('../../../src/services/news/hearing.js');
    const span = { fromMs: s(10), toMs: s(20) };
    expect(shownStates(span, s(18), s(21))).toEqual(span);
    expect(shownStates(span, s(5), s(6))).toEqual(span);
    expect(shownStates(span, s(15), s(16))).toEqual({ fromMs: s(15), toMs: s(20) });
  });
});

describe('what was shown is the floor of each state, for the same last-heard instant', () => {
  const row = (lastHeardMs: number) => ({ name: 'bd-000500', site: 'site-0', lastHeardAt: new Date(lastHeardMs).toISOString(), modules: ['agent'] });
  const lateSpan = [{ fromMs: s(1), toMs: s(31) }];

  const pacer = new Pacer();

  test('an incremental composition never shows a SILENT machine LATE or UP because a span reaching back was learned', async () => {
    const view = await MeshView.of([row(L)], [], [], []);
    expect((await view.machines(at(s(13)), pacer))[0]!.state).toBe('SILENT');
    expect((await view.machines(at(s(32), lateSpan), pacer))[0]!.state).toBe('SILENT');
    // Read again (news named it, or it was about to cross) with the same last-heard instant: still SILENT.
    view.replaceTouched(['bd-000500'], [{ ...row(L), claims: [['agent', []]], recorded: [] }]);
    expect((await view.machines(at(s(33), lateSpan), pacer))[0]!.state).toBe('SILENT');
    expect(view.crossingMs).toBeUndefined();
    // News from it is what makes it UP again.
    view.replaceTouched(['bd-000500'], [{ ...row(s(32)), claims: [['agent', []]], recorded: [] }]);
    expect((await view.machines(at(s(33), lateSpan), pacer))[0]!.state).toBe('UP');
  });

  test('a full composition (a takeover) shows no machine better than the last composition did for the same last-heard instant', async () => {
    const shown: MachineStatus[] = [
      { ...row(L), state: 'SILENT', holdings: [] },
      { ...row(L), name: 'bd-000501', state: 'LATE', holdings: [] },
    ];
    const view = await MeshView.of([row(L), { ...row(s(31)), name: 'bd-000501' }, { ...row(L), name: 'bd-000502' }], [], [], [], shown);
    const states = (await view.machines(at(s(32), lateSpan), pacer)).map((m) => [m.name, m.state]);
    // bd-000501 was heard since it was shown LATE: news makes it UP; bd-000502 was never shown.
    expect(states).toEqual([
      ['bd-000500', 'SILENT'],
      ['bd-000501', 'UP'],
      ['bd-000502', 'UP'],
    ]);
  });
});
