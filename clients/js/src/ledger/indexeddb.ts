/**
 * The ledger in a browser: an IndexedDB database `dprec-ledger:<name>` with two object
 * stores, `state` (the ledger's JSON text under the key `ledger`) and `sent` (each stored
 * message's bytes under `<run>-<round>`), and the Web Locks API for the exclusive section.
 *
 * Every read-modify-write runs inside `navigator.locks.request("dprec-ledger:<name>",
 * {mode: "exclusive"}, ...)`: two tabs (or workers) of one origin decide one at a time, and
 * the state is re-read from the database inside the lock. An IndexedDB transaction cannot
 * stay open across the device's own awaits (building a message), so each read or write is
 * its own transaction and the Web Lock is what holds the section together; a put commits
 * atomically (the old record or the new one).
 */
import { LedgerError } from "../errors.js";
import { StoredLedger, type LedgerStore } from "./ledger.js";

/** The part of the Web Locks API the ledger uses (`navigator.locks`). */
export interface LockRequester {
  request<T>(name: string, options: { mode: "exclusive" },
             callback: (lock: unknown) => Promise<T>): Promise<T>;
}

/** Where the database and the locks come from (a test passes fake-indexeddb and a stand-in). */
export interface BrowserLedgerOptions {
  indexedDB?: IDBFactory;
  locks?: LockRequester;
}

const STATE = "state";
const SENT = "sent";
const STATE_KEY = "ledger";

function done<T>(request: IDBRequest<T>, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(new LedgerError(`IndexedDB ${what} failed: ` +
      `${request.error?.message ?? "unknown error"}`));
  });
}

function committed(tx: IDBTransaction, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    const fail = () => reject(new LedgerError(`IndexedDB ${what} did not commit: ` +
      `${tx.error?.message ?? "aborted"}`));
    tx.onerror = fail;
    tx.onabort = fail;
  });
}

/** A {@link LedgerStore} in IndexedDB under Web Locks (module doc). */
export class IndexedDBStore implements LedgerStore {
  readonly where: string;

  private constructor(private readonly db: IDBDatabase, private readonly lockName: string,
                      private readonly locks: LockRequester) {
    this.where = `IndexedDB ${db.name}`;
  }

  /** Open (or create) the database of ledger `name`. */
  static async open(name: string, options: BrowserLedgerOptions = {}): Promise<IndexedDBStore> {
    const factory = options.indexedDB ?? globalThis.indexedDB;
    const locks = options.locks ?? (globalThis.navigator as { locks?: LockRequester } | undefined)?.locks;
    if (factory === undefined) throw new LedgerError("this platform has no IndexedDB for the ledger");
    if (locks === undefined) {
      throw new LedgerError("this platform has no Web Locks API (navigator.locks): the ledger " +
        "cannot keep two tabs from spending the same budget; use a current browser");
    }
    const dbName = `dprec-ledger:${name}`;
    const request = factory.open(dbName, 1);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(STATE)) db.createObjectStore(STATE);
      if (!db.objectStoreNames.contains(SENT)) db.createObjectStore(SENT);
    };
    const db = await done(request, `open ${dbName}`);
    if (!db.objectStoreNames.contains(STATE) || !db.objectStoreNames.contains(SENT)) {
      db.close();
      throw new LedgerError(`the database ${dbName} is not a dprec ledger (no ${STATE} and ` +
        `${SENT} stores); refusing to guess what was spent`);
    }
    return new IndexedDBStore(db, dbName, locks);
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.locks.request(this.lockName, { mode: "exclusive" }, () => fn());
  }

  private async get(store: string, key: string): Promise<unknown> {
    const tx = this.db.transaction(store, "readonly");
    return done(tx.objectStore(store).get(key), `read of ${store}/${key}`);
  }

  private async put(store: string, key: string, value: unknown): Promise<void> {
    const tx = this.db.transaction(store, "readwrite");
    const ok = committed(tx, `write of ${store}/${key}`);
    tx.objectStore(store).put(value, key);
    await ok;
  }

  async readState(): Promise<string | null> {
    const value = await this.get(STATE, STATE_KEY);
    if (value === undefined) return null;
    if (typeof value !== "string") {
      throw new LedgerError(`the ledger at ${this.where} is unreadable (its state is a ` +
        `${typeof value}, not text); refusing to guess what was spent`);
    }
    return value;
  }

  writeState(text: string): Promise<void> {
    return this.put(STATE, STATE_KEY, text);
  }

  async readMessage(name: string): Promise<Uint8Array | null> {
    const value = await this.get(SENT, name);
    if (value === undefined) return null;
    if (!(value instanceof Uint8Array)) {
      throw new LedgerError(`the message stored as ${name} in ${this.where} is not bytes`);
    }
    return value;
  }

  async writeMessage(name: string, body: Uint8Array): Promise<void> {
    if ((await this.readMessage(name)) !== null) {
      throw new LedgerError(`a message is stored already as ${name} in ${this.where}; it is ` +
        "never replaced");
    }
    await this.put(SENT, name, new Uint8Array(body));
  }

  /** Close the database (this store is unusable afterwards). */
  close(): void {
    this.db.close();
  }
}

/** The browser ledger `name` with `budget` (epsilon, fixed when first made): IndexedDB and
 * Web Locks (module doc); what the demo page and its Playwright test open. */
export async function openBrowserLedger(name: string, budget: number,
                                        options: BrowserLedgerOptions = {}): Promise<StoredLedger> {
  const store = await IndexedDBStore.open(name, options);
  return new StoredLedger(store, budget).init();
}
