import { Counter, Gauge, type Registry } from 'prom-client';

/** A counter whose value is read from a count kept elsewhere, at scrape time. */
export function readCounter(registry: Registry, name: string, help: string, read: () => number | undefined): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const value = read();
      this.reset();
      if (value) this.inc(value);
    },
  });
}

/** A gauge read at scrape time; no sample while the part it reads is not there (undefined). */
export function readGauge(registry: Registry, name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const value = await read();
      if (value === undefined) this.reset();
      else this.set(value);
    },
  });
}

/**
 * A counter of one label whose counts are kept elsewhere (refusals by reason, escapes by place),
 * read whole at scrape time: a label value read with 0 is shown as 0, one not read is not shown.
 */
export function readCounts(registry: Registry, name: string, help: string, label: string, read: () => Iterable<readonly [string, number]>): void {
  new Counter({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      this.reset();
      for (const [value, count] of read()) this.inc({ [label]: value }, count);
    },
  });
}
