/** The device's privacy ledger: one interface ({@link Ledger}), two stores (IndexedDB under
 * Web Locks in a browser, a locked JSON file under Node). */
export * from "./ledger.js";
export { IndexedDBStore, openBrowserLedger } from "./indexeddb.js";
export type { BrowserLedgerOptions, LockRequester } from "./indexeddb.js";
