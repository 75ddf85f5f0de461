/** One column of a table: its heading and how a row shows in it. */
export interface Column<T> {
  heading: string;
  value(row: T): unknown;
}

/** A list in a cell shows its first this many, then `+N more`: 200 holders must not make one line of 5,000 characters. */
export const LIST_SHOWN = 3;
/** A cell is cut past this many characters, ending in `…`. */
const CELL_MAX = 60;

/** `--wide`: every item of a list and every character of a cell. */
let wide = false;

/** Sets `--wide` for what this process prints. */
export function showWide(on: boolean): void {
  wide = on;
}

const cut = (text: string): string => (wide || text.length <= CELL_MAX ? text : `${text.slice(0, CELL_MAX - 1)}…`);

/** Items as people read them: the first LIST_SHOWN (all with --wide), then `+N more`, each item cut to CELL_MAX. */
export function listed(values: readonly unknown[], separator = ', '): string {
  if (values.length === 0) return '(none)';
  const shown = wide ? values : values.slice(0, LIST_SHOWN);
  const text = shown.map(cell).join(separator);
  return shown.length < values.length ? `${text} +${values.length - shown.length} more` : text;
}

/** A value as a table cell: lists bounded (`listed`), nothing as `-`, instants as they are (ISO, UTC), long text cut. */
function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value)) return value.length ? listed(value, ',') : '-';
  if (typeof value === 'object') return cut(JSON.stringify(value));
  return cut(String(value));
}

/** A titled part of a longer output: `title:` on its own line, then the body (a table, or `(none)`). */
export function section(title: string, body: string): string {
  return `${title}:\n${body}`;
}

/** Rows as a plain text table, columns padded to their widest cell; with none, the headings and `(none)` under them, so it says what is missing. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return `${columns.map((c) => c.heading.toUpperCase()).join('  ')}\n(none)`;
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
