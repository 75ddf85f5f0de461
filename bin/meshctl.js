#!/usr/bin/env node
// meshctl, built: `npm ci` builds dist/ (the `prepare` script), as `npm start` and `npm run build` do.
import('../dist/src/cli/main.js').catch((error) => {
  if (error && error.code === 'ERR_MODULE_NOT_FOUND') {
    process.stderr.write('meshctl: dist/ is not built; run `npm run build` first\n');
    process.exit(2);
  }
  throw error;
});
