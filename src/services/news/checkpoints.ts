import type { Logger } from 'pino';
import { fnv1a } from '../../kernel/fnv.js';
import type { Store } from '../../store/db.js';
import { type Checkpoint, writeCheckpoints } from '../machines/changes.js';

/** The checkpoint writer wakes this often and writes the machines whose turn came since it last woke. */
const CHECKPOINT_TICK_MS = 1_000;

/** A name's place in the period, so each machine keeps its own second. */
const slotOf = (name: string, slots: number): number => fnv1a(name) % slots;

/**
 * What this replica's ingest owes the store (issue 37): for each machine whose beats it took in and
 * did not write (they changed nothing stored), how many and the latest heard instant. Kept per slot
 * of the checkpoint period, so each tick takes one slot's machines: machines / period rows a second.
 */
export class CheckpointsOwed {
  private readonly slots: Map<string, Checkpoint>[];

  constructor(readonly periodMs: number) {
    this.slots = Array.from({ length: Math.max(1, Math.round(periodMs / CHECKPOINT_TICK_MS)) }, () => new Map());
  }

  get slotCount(): number {
    return this.slots.length;
  }

  /** Owes one beat of `machine` heard at `atMs`. */
  owe(machine: string, atMs: number): void {
    const slot = this.slots[slotOf(machine, this.slots.length)]!;
    const owed = slot.get(machine);
    if (owed) {
      owed.beats++;
      owed.lastHeardMs = Math.max(owed.lastHeardMs, atMs);
    } else slot.set(machine, { machine, beats: 1, lastHeardMs: atMs });
  }

  /** Takes what slot `index` owes (it owes nothing after). */
  take(index: number): Checkpoint[] {
    const slot = this.slots[index]!;
    const owed = [...slot.values()];
    slot.clear();
    return owed;
  }

  /** Owes again checkpoints that could not be written. */
  giveBack(checkpoints: readonly Checkpoint[]): void {
    for (const c of checkpoints) {
      const slot = this.slots[slotOf(c.machine, this.slots.length)]!;
      const owed = slot.get(c.machine);
      if (owed) {
        owed.beats += c.beats;
        owed.lastHeardMs = Math.max(owed.lastHeardMs, c.lastHeardMs);
      } else slot.set(c.machine, { ...c });
    }
  }
}

export interface Checkpointing {
  /** Writes everything owed now (a flush, a stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Writes what `owed` holds, one slot each CHECKPOINT_TICK_MS (the slots a late tick skipped with
 * it), so a steady mesh writes each machine once per period, spread evenly. What the store could
 * not take is owed again and written with the next turn; one write at a time.
 */
export function startCheckpointing(db: Store, owed: CheckpointsOwed, logger: Logger): Checkpointing {
  const tickNow = () => Math.floor(Date.now() / CHECKPOINT_TICK_MS);
  let done = tickNow();
  let writing: Promise<void> = Promise.resolve();
  let failing = false;
  const write = (slots: number[]) => {
    writing = writing.then(async () => {
      const due = slots.flatMap((s) => owed.take(s));
      await writeCheckpoints(db, due).then(
        () => {
          failing = false;
        },
        (err) => {
          owed.giveBack(due);
          if (!failing) logger.warn({ err: String(err), machines: due.length }, 'a checkpoint of last-heard could not be written: it is written with the next');
          failing = true;
        },
      );
    });
    return writing;
  };
  const timer = setInterval(() => {
    const now = tickNow();
    const slots: number[] = [];
    for (let tick = Math.max(done + 1, now - owed.slotCount + 1); tick <= now; tick++) slots.push(tick % owed.slotCount);
    done = now;
    if (slots.length) void write(slots);
  }, CHECKPOINT_TICK_MS);
  timer.unref();
  const all = () => write(Array.from({ length: owed.slotCount }, (_, i) => i));
  return {
    flush: all,
    async stop() {
      clearInterval(timer);
      await all();
    },
  };
}
