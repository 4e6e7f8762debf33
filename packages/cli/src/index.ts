export { main } from './main.js';
export { ExitCode } from './exit-codes.js';
export { parseStoreUrl, type StoreLocation } from './store-url.js';
