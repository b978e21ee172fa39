/** The SDK's Node-only parts: the ledger in a locked JSON file (ledger/node_file.ts). */
export { FileLock, NodeFileStore, atomicWrite, openNodeLedger } from "./ledger/node_file.js";
export type { FileLockOptions } from "./ledger/node_file.js";
