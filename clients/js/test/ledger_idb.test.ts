import { test } from "node:test";
import assert from "node:assert/strict";
import { IDBFactory } from "fake-indexeddb";
import { BudgetExceededError, LedgerError } from "../src/errors.js";
import { IndexedDBStore, openBrowserLedger } from "../src/ledger/indexeddb.js";
import { StoredLedger } from "../src/ledger/ledger.js";
import { LocksStandIn } from "./helpers/locks.js";

const RUN = "cd".repeat(32);

/** A fresh origin: its IndexedDB and its Web Locks, shared by every tab of it. */
function origin() {
  return { indexedDB: new IDBFactory(), locks: new LocksStandIn() };
}

async function rawPut(factory: IDBFactory, name: string, store: string, key: string,
                      value: unknown): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = factory.open(`dprec-ledger:${name}`);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  await new Promise<void>((resolve, reject) => {
    const tx = db.transaction(store, "readwrite");
    tx.objectStore(store).put(value, key);
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
  db.close();
}

test("IndexedDB: a key is charged once, past the budget nothing changes, it survives a reload", async () => {
  const o = origin();
  const ledger = await openBrowserLedger("user", 3, o);
  assert.equal(await ledger.charge("a", 2), true);
  assert.equal(await ledger.charge("a", 2), false);
  await assert.rejects(ledger.charge("b", 1.5), BudgetExceededError);
  assert.equal(await ledger.spent(), 2);
  const reloaded = await openBrowserLedger("user", 3, o); // a reload: a new page, same origin
  assert.equal(await reloaded.spent(), 2);
  assert.deepEqual(await reloaded.entries(), [{ key: "a", epsilon: 2 }]);
  await assert.rejects(openBrowserLedger("user", 4, o), /budget is fixed/);
  const other = await openBrowserLedger("another-user", 3, o);
  assert.equal(await other.spent(), 0);
});

test("IndexedDB: every read-modify-write holds the origin's exclusive Web Lock", async () => {
  const o = origin();
  const ledger = await openBrowserLedger("user", 5, o);
  await ledger.charge("a", 1);
  await ledger.locked(async (v) => v.storeMessage(RUN, 0, Uint8Array.of(1, 2, 3)));
  assert.ok(o.locks.requests.length >= 3);
  assert.ok(o.locks.requests.every((r) => r.name === "dprec-ledger:user" && r.mode === "exclusive"));
});

test("IndexedDB: two tabs racing for the last of the budget never double-spend", async () => {
  const o = origin();
  const [tab1, tab2] = await Promise.all([openBrowserLedger("user", 10, o),
                                          openBrowserLedger("user", 10, o)]);
  const tries = Array.from({ length: 30 }, (_, i) => (i % 2 ? tab1 : tab2).charge(`k${i}`, 1)
    .then(() => 1, (e) => { if (e instanceof BudgetExceededError) return 0; throw e; }));
  const charged = (await Promise.all(tries)).reduce((s, x) => s + x, 0);
  assert.equal(charged, 10);
  assert.equal(await tab1.spent(), 10);
  assert.equal(o.locks.maxHolders, 1);
});

test("IndexedDB: a stored message is re-read bit for bit and never replaced", async () => {
  const o = origin();
  const ledger = await openBrowserLedger("user", 5, o);
  const body = Uint8Array.from({ length: 300 }, (_, i) => (i * 37) % 256);
  await ledger.locked((v) => v.storeMessage(RUN, 2, body));
  const reloaded = await openBrowserLedger("user", 5, o);
  assert.deepEqual(await reloaded.locked((v) => v.message(RUN, 2)), body);
  await assert.rejects(reloaded.locked((v) => v.storeMessage(RUN, 2, body)), /never replaced/);
});

test("IndexedDB: a corrupt or hostile stored state is refused, never reset", async () => {
  for (const value of ["{not json", JSON.stringify({ format: 1, budget: 5, charges: { a: -3 } }),
                       42, { format: 1, budget: 5, charges: {} }]) {
    const o = origin();
    await openBrowserLedger("user", 5, o);
    await rawPut(o.indexedDB, "user", "state", "ledger", value);
    await assert.rejects(openBrowserLedger("user", 5, o), LedgerError, JSON.stringify(value));
    const store = await IndexedDBStore.open("user", o);
    const kept = await new StoredLedger(store, 5).locked(async () => 0).catch(() => "refused");
    assert.equal(kept, "refused", "still refused: nothing was reset");
    store.close();
  }
  const o = origin();
  await openBrowserLedger("user", 5, o);
  await rawPut(o.indexedDB, "user", "sent", `${RUN}-0`, "text");
  const ledger = await openBrowserLedger("user", 5, o);
  await assert.rejects(ledger.locked((v) => v.message(RUN, 0)), /not bytes/);
});

test("IndexedDB without Web Locks is refused (two tabs could both spend)", {
  skip: (globalThis.navigator as { locks?: unknown } | undefined)?.locks !== undefined
    ? "this Node has navigator.locks" : false,
}, async () => {
  await assert.rejects(openBrowserLedger("user", 5, { indexedDB: new IDBFactory() }), /Web Locks/);
});
