// Where the package runs: Node (files from disk, no Cache API) or a browser.

export const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';
