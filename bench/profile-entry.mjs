// A child gateway under a CPU profiler the bench starts and stops by signal (`npm run bench -- steady`
// with BENCH_PROFILE=1): the first SIGUSR2 starts the profile, the second writes it to
// PROFILE_DIR/<pid>.cpuprofile. `--cpu-prof` is refused in NODE_OPTIONS, and a profile of the
// whole process would hold its start; the gateway is PROFILE_ENTRY, imported as it is.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
let profiling = false;
process.on('SIGUSR2', () => {
  if (!profiling) {
    profiling = true;
    session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 500 }, () => session.post('Profiler.start')));
    return;
  }
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(`${process.env.PROFILE_DIR}/${process.pid}.cpuprofile`, JSON.stringify(result.profile));
  });
});
await import(process.env.PROFILE_ENTRY);
