import { clock, el } from './dom.js';
import type { DashboardMachineChangeFragment as MachineChange } from './generated/graphql.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 1000;
const HEIGHT = 14;

/**
 * One machine's history as a strip of its states (`data-testid="machine-history"`): a segment per
 * change from `machineHistory`, as long as the state lasted (the last one until `until`), each
 * titled with its state and when it began. A forgotten machine's span is left blank.
 */
export function machineHistoryStrip(name: string, changes: MachineChange[], until = new Date().toISOString()): HTMLElement {
  const box = el('div', 'history');
  box.dataset.testid = 'machine-history';
  box.dataset.machine = name;
  if (!changes.length) {
    box.append(el('p', 'muted', 'no history kept for this machine'));
    return box;
  }
  const from = Date.parse(changes[0]!.at);
  const to = Math.max(Date.parse(until), from + 1000);
  const x = (iso: string) => ((Date.parse(iso) - from) / (to - from)) * WIDTH;
  const strip = document.createElementNS(SVG, 'svg');
  strip.setAttribute('viewBox', `0 0 ${WIDTH} ${HEIGHT}`);
  strip.setAttribute('preserveAspectRatio', 'none');
  strip.classList.add('strip');
  changes.forEach((c, i) => {
    if (!c.state) return;
    const start = x(c.at);
    const end = i + 1 < changes.length ? x(changes[i + 1]!.at) : WIDTH;
    const rect = document.createElementNS(SVG, 'rect');
    for (const [k, v] of Object.entries({ x: start, y: 0, width: Math.max(end - start, 1), height: HEIGHT })) rect.setAttribute(k, String(v));
    rect.setAttribute('class', `seg ${c.state}`);
    rect.dataset.state = c.state;
    rect.dataset.at = c.at;
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${c.state} from ${clock(c.at)}`;
    rect.append(title);
    strip.append(rect);
  });
  const list = el('p', 'muted history-changes', changes.map((c) => `${clock(c.at)} ${c.state ?? 'absent'}`).join(' → '));
  box.append(strip, list);
  return box;
}
