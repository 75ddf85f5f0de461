/** `everyMs` above this (an hour) is refused: a dashboard that rare wants `status` as a query. */
export const EVERY_MS_MAX = 3_600_000;
