import { run as badday } from './badday.js';
import { run as childStart } from './child-start.js';
import { run as cluster } from './cluster.js';
import { run as compose, run1m as compose1m, run100k as compose100k } from './compose.js';
import { run as cores } from './cores.js';
import { run as counts } from './counts.js';
import { run as dashboard } from './dashboard.js';
import { run as fanout } from './fanout.js';
import { run as ingestWrites } from './ingest-writes.js';
import { run as lookBack } from './look-back.js';
import { run as million } from './million.js';
import { run as pages } from './pages.js';
import { run as publish } from './publish.js';
import { run as reads } from './reads.js';
import { run as replay } from './replay.js';
import { run as stalls } from './stalls.js';
import { run as steady } from './steady.js';
import { run as stream } from './stream.js';
import { run as streamAck } from './stream-ack.js';

// Each bench prints its figures; `npm run bench -- compose` runs one by name, no name runs them all.
const BENCHES: Record<string, () => Promise<string>> = {
  compose,
  'compose-100k': compose100k,
  'compose-1m': compose1m,
  fanout,
  stream,
  'stream-ack': streamAck,
  cluster,
  reads,
  dashboard,
  badday,
  million,
  stalls,
  counts,
  'look-back': lookBack,
  pages,
  cores,
  'child-start': childStart,
  'ingest-writes': ingestWrites,
  publish,
  steady,
  replay,
};

const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const name of asked.length ? asked : Object.keys(BENCHES)) {
  const bench = BENCHES[name];
  if (!bench) {
    console.error(`no bench named ${name}; there are: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n## ${name}\n`);
  console.log(await bench());
}
process.exit(0);
