/** Every subject the gateway speaks, under the configured root (MESH_SUBJECTS). */
export interface Subjects {
  root: string;
  status: string;
  seatVerb(seat: string, verb: string): string;
  /**
   * A verb of a seat, sent by one NATS user: `<root>.seat.<seat>.<verb>.<user>`. The account lets
   * only that user publish there, so the last token names the caller honestly (docs/calls.md).
   */
  seatVerbAs(seat: string, verb: string, user: string): string;
  /** Every verb of one seat: what a seat's responder listens on. */
  seatVerbs(seat: string): string;
  /** Every verb of one seat sent by a named user: what the controller's responder also listens on. */
  seatVerbsNamed(seat: string): string;
  machineNews(machine: string): string;
  allMachineNews: string;
  buildNews(build: string): string;
  allBuildNews: string;
  planApply(plan: string): string;
  /** A plan's state, tier or applies changed: every replica hears it and tells its planChanged subscribers. */
  planChanged(plan: string): string;
  allPlanChanges: string;
}

export function subjectsUnder(root: string): Subjects {
  return {
    root,
    status: `${root}.status`,
    seatVerb: (seat, verb) => `${root}.seat.${seat}.${verb}`,
    seatVerbAs: (seat, verb, user) => `${root}.seat.${seat}.${verb}.${user}`,
    seatVerbs: (seat) => `${root}.seat.${seat}.*`,
    seatVerbsNamed: (seat) => `${root}.seat.${seat}.*.*`,
    machineNews: (machine) => `${root}.news.machine.${machine}`,
    allMachineNews: `${root}.news.machine.*`,
    buildNews: (build) => `${root}.news.build.${build}`,
    allBuildNews: `${root}.news.build.*`,
    planApply: (plan) => `${root}.plan.${plan}.apply`,
    planChanged: (plan) => `${root}.plan.${plan}.changed`,
    allPlanChanges: `${root}.plan.*.changed`,
  };
}
