/** A stand-in for the Web Locks API under Node (navigator.locks): one holder per name, the
 * others queued first come first served; it records every request's name and mode. */
import type { LockRequester } from "../../src/ledger/indexeddb.js";

export class LocksStandIn implements LockRequester {
  readonly requests: Array<{ name: string; mode: string }> = [];
  private readonly tails = new Map<string, Promise<void>>();
  holders = 0;
  maxHolders = 0;

  async request<T>(name: string, options: { mode: "exclusive" },
                   callback: (lock: unknown) => Promise<T>): Promise<T> {
    this.requests.push({ name, mode: options.mode });
    const before = this.tails.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => { release = resolve; });
    this.tails.set(name, before.then(() => mine));
    await before;
    this.holders += 1;
    this.maxHolders = Math.max(this.maxHolders, this.holders);
    try {
      return await callback({ name, mode: options.mode });
    } finally {
      this.holders -= 1;
      release();
    }
  }
}
