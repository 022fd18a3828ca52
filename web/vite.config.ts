import { defineConfig } from 'vite';

/**
 * The merchant dashboard: a static bundle (no server of its own). Preact through Oxc's automatic JSX
 * runtime (no plugin); `npm run web:build` writes web/dist, which `npm start` serves locally and the
 * CDK app deploys to S3 behind CloudFront.
 */
export default defineConfig({
  root: import.meta.dirname,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', target: 'es2022', sourcemap: false, assetsInlineLimit: 0, reportCompressedSize: false },
});
