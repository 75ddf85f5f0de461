import { clock, el } from './dom.js';
import type { DashboardCountFragment as CountPoint } from './generated/graphql.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 1000;
const HEIGHT = 60;
/** Points kept on the page: the history's (about 240) and the live ones after it, the oldest leaving first. */
const POINTS_KEPT = 600;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/**
 * UP / LATE / SILENT over the kept history as stacked bars of plain SVG (`data-testid="timeline"`),
 * from `statusCounts` once, then a point per step from the live compositions (no request). A click
 * chooses the instant under it; the instant viewed is marked.
 */
export class Timeline {
  private points: CountPoint[] = [];
  /** The instant of the latest composition heard (the chart's right edge). */
  private latestMs = 0;
  private stepMs = 60_000;
  private marked: string | undefined;
  private readonly chart: SVGSVGElement;
  private readonly caption: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly onChoose: (at: string) => void,
  ) {
    this.chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', 'data-testid': 'timeline', role: 'img' });
    this.chart.classList.add('timeline');
    this.caption = el('p', 'muted timeline-caption', 'no history yet');
    root.replaceChildren(this.chart, this.caption);
    this.chart.addEventListener('click', (event) => {
      const at = this.instantAt(event.clientX);
      if (at) this.onChoose(at);
    });
    this.chart.addEventListener('mousemove', (event) => {
      const at = this.instantAt(event.clientX);
      this.chart.setAttribute('aria-label', at ? `choose ${clock(at)}` : 'timeline');
    });
  }

  /** The history as statusCounts answered it, oldest first. */
  load(points: CountPoint[]): void {
    this.points = points.slice(-POINTS_KEPT);
    if (points.length > 1) this.stepMs = Math.max(1000, Date.parse(points[1]!.at) - Date.parse(points[0]!.at));
    this.draw();
  }

  /**
   * The live composition's counts: the last point takes them (keeping the instant its step began,
   * so the bar before it is not stretched to now), or a new one starts once a step has passed. The
   * chart runs to the latest composition, so the mesh as it is now is drawn, not only named.
   */
  live(point: CountPoint): void {
    const last = this.points.at(-1);
    this.latestMs = Math.max(this.latestMs, Date.parse(point.at));
    if (last && Date.parse(point.at) - Date.parse(last.at) < this.stepMs && this.points.length > 1)
      this.points[this.points.length - 1] = { ...point, at: last.at };
    else this.points.push(point);
    if (this.points.length > POINTS_KEPT) this.points.splice(0, this.points.length - POINTS_KEPT);
    this.draw();
  }

  /** Marks the instant viewed (undefined: live). */
  mark(at: string | undefined): void {
    this.marked = at;
    this.draw();
  }

  private span(): [number, number] | undefined {
    const first = this.points[0];
    const last = this.points.at(-1);
    if (!first || !last) return undefined;
    const from = Date.parse(first.at);
    return [from, Math.max(Date.parse(last.at), this.latestMs, from + 1000)];
  }

  private instantAt(clientX: number): string | undefined {
    const span = this.span();
    if (!span) return undefined;
    const box = this.chart.getBoundingClientRect();
    const share = Math.min(1, Math.max(0, (clientX - box.left) / box.width));
    return new Date(span[0] + share * (span[1] - span[0])).toISOString();
  }

  private draw(): void {
    const start = performance.now();
    this.drawNow();
    performance.measure('mesh:timeline', { start, end: performance.now() });
  }

  private drawNow(): void {
    const span = this.span();
    if (!span) {
      this.chart.replaceChildren();
      this.caption.textContent = 'no history yet';
      return;
    }
    const [from, to] = span;
    const x = (t: number) => ((t - from) / (to - from)) * WIDTH;
    const max = Math.max(1, ...this.points.map((p) => p.up + p.late + p.silent));
    const nodes: SVGElement[] = [];
    this.points.forEach((p, i) => {
      const start = x(Date.parse(p.at));
      const end = i + 1 < this.points.length ? x(Date.parse(this.points[i + 1]!.at)) : WIDTH;
      const width = Math.max(end - start, 0.5);
      let y = HEIGHT;
      for (const [state, n] of [
        ['SILENT', p.silent],
        ['LATE', p.late],
        ['UP', p.up],
      ] as const) {
        if (!n) continue;
        const h = (n / max) * HEIGHT;
        y -= h;
        nodes.push(svg('rect', { x: start, y, width, height: h, class: `seg ${state}`, 'data-state': state }));
      }
    });
    if (this.marked) {
      const at = x(Date.parse(this.marked));
      nodes.push(svg('line', { x1: at, x2: at, y1: 0, y2: HEIGHT, class: 'mark' }));
    }
    this.chart.replaceChildren(...nodes);
    const last = this.points.at(-1)!;
    this.caption.textContent = `${clock(new Date(from).toISOString())} – ${clock(new Date(to).toISOString())} · now ${last.up} up · ${last.late} late · ${last.silent} silent · click to look back`;
  }
}
