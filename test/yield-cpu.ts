import { getPriority, setPriority } from 'node:os';

/**
 * The niceness every test file but the bad day's runs at (vitest.config.ts): the bad day judges
 * timing to 2 s beside them, so its replicas get the CPU they ask for first. The processes a file
 * starts (gateways, meshctl, servers) inherit it. Raising one's niceness needs no privilege.
 */
const OTHER_FILES_NICENESS = 10;

if (getPriority() < OTHER_FILES_NICENESS) setPriority(OTHER_FILES_NICENESS);
