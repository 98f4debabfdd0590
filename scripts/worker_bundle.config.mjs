// rolldown's config for the package's worker (scripts/build_web.sh): www/pkg/worker.js and the
// modules it imports, as one file. A module Worker fetches and links every static import before
// its first line runs: about 30 modules, 80-140 ms of a page's first load in Chromium. The
// wasm-bindgen glue stays its own file (imported when the build is chosen), as do Node's modules.
export default {
  input: 'www/pkg/worker.js',
  platform: 'browser',
  external: [/^\.\/webert_wasm(_threads)?\.js$/, /^node:/],
  output: {
    file: 'www/pkg/.worker.bundle.js',
    format: 'esm',
    codeSplitting: false,
    banner: '// www/pkg-src/worker.js and its imports in one file (scripts/build_web.sh).',
  },
};
