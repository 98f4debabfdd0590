// As the package README says for Vite's dev server: serve webert's worker and .wasm as they are.
export default { optimizeDeps: { exclude: ['webert'] } };
