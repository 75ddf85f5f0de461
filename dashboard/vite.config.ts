import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard is built into dist/dashboard, which the gateway serves at `/`: everything the
// page needs is in that folder, nothing is fetched from another host.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    assetsInlineLimit: 0,
  },
});
