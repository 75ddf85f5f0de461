import { createHash } from 'node:crypto';

/** How a token is kept in the tokens file: its SHA-256, in hex; the token itself is never stored. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');
