/** One column of a table: its heading and how a row shows in it. */
export interface Column<T> {
  heading: string;
  value(row: T): unknown;
}

/** A value as a table cell: lists joined, nothing as `-`, instants as they are (ISO, UTC). */
function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value)) return value.length ? value.map(cell).join(',') : '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Rows as a plain text table, columns padded to their widest cell; `(none)` when there are none. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((c) => cell(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.heading.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  return [line(columns.map((c) => c.heading.toUpperCase())), ...cells.map(line)].join('\n');
}

/** A record as `key: value` lines, keys aligned. */
export function record(entries: readonly [string, unknown][]): string {
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${cell(v)}`).join('\n');
}

/** Shorthand for a column read straight from a field. */
export const col = <T>(heading: string, value: (row: T) => unknown): Column<T> => ({ heading, value });
