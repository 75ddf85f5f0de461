/** Every subject the gateway speaks, under the configured root (MESH_SUBJECTS). */
export interface Subjects {
  root: string;
  status: string;
  seatVerb(seat: string, verb: string): string;
  /** Every verb of one seat: what a seat's responder listens on. */
  seatVerbs(seat: string): string;
  machineNews(machine: string): string;
  allMachineNews: string;
  buildNews(build: string): string;
  allBuildNews: string;
  planApply(plan: string): string;
}

export function subjectsUnder(root: string): Subjects {
  return {
    root,
    status: `${root}.status`,
    seatVerb: (seat, verb) => `${root}.seat.${seat}.${verb}`,
    seatVerbs: (seat) => `${root}.seat.${seat}.*`,
    machineNews: (machine) => `${root}.news.machine.${machine}`,
    allMachineNews: `${root}.news.machine.*`,
    buildNews: (build) => `${root}.news.build.${build}`,
    allBuildNews: `${root}.news.build.*`,
    planApply: (plan) => `${root}.plan.${plan}.apply`,
  };
}
