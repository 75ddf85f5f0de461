/** Makes an element with a class and text: the page's one way to build DOM (no HTML strings, so no markup from data). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}

/** "12:03:04", or the date too when not today. */
const TIME = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium', hour12: false });

export function clock(iso: string | null | undefined): string {
  if (!iso) return '';
  const at = new Date(iso);
  return (new Date().toDateString() === at.toDateString() ? TIME : DATE_TIME).format(at);
}

/** "4 s", "3 min", "2 h" since an instant. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

/** Seconds as people read them: "850 ms", "12.3 s", "4.1 min". */
export function seconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 120) return `${value.toFixed(1)} s`;
  return `${(value / 60).toFixed(1)} min`;
}
