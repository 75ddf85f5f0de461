/** Local triggers are gathered this long into one request to the serving replica. */
export const POKE_GATHER_MS = 10;
