/**
 * The ledger under Node: a folder (mode 0700) holding `ledger.json` (mode 0600, Python's
 * DiskLedger format plus the pinned run), `sent/<run>-<round>.msg` (every message stored to
 * send) and, while one holder decides, `ledger.json.lock`.
 *
 * Writes are atomic: a temporary file in the same folder (created exclusively), written,
 * fsynced, renamed over the target, then the folder fsynced. A crash leaves the old file or
 * the new one, never a torn one.
 *
 * The lock is an exclusive lock file (`open(O_CREAT | O_EXCL)`): whoever creates it holds
 * the ledger, writes `{pid, host, nonce}` into it, and removes it when done; the others poll
 * (5 ms to 100 ms) until it is gone, for at most `timeoutMs`. A lock is stale, and is
 * broken, only when its holder is a process of this host that no longer exists (`kill(pid,
 * 0)` gives ESRCH), or its file stayed empty or unreadable for `staleMs` (a holder that died
 * between creating and writing it). It is broken by renaming it to a unique name and
 * checking that what was renamed is the stale record seen (else it is linked back). A lock
 * held by another host is never broken (a shared network folder: remove it by hand). Before
 * every write the holder checks that the lock file still holds its own nonce, and refuses to
 * write otherwise (LedgerError), so a broken lock can at worst fail a report, never let two
 * holders both write.
 */
import { randomBytes } from "node:crypto";
import { promises as fs, constants } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { DprecError, LedgerError } from "../errors.js";
import { StoredLedger, type LedgerStore } from "./ledger.js";

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** How long to wait for the lock, and when an empty lock file counts as stale. */
export interface FileLockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Write `data` to `path` atomically and durably (mode 0600). */
export async function atomicWrite(path: string, data: Uint8Array | string): Promise<void> {
  const dir = join(path, "..");
  const tmp = join(dir, `.${path.split("/").pop()}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(tmp, path);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  const folder = await fs.open(dir, constants.O_RDONLY);
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

interface LockRecord {
  pid: number;
  host: string;
  nonce: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return code(e) !== "ESRCH";
  }
}

/** The exclusive lock file of the module doc. */
export class FileLock {
  private readonly timeoutMs: number;
  private readonly staleMs: number;

  constructor(readonly path: string, options: FileLockOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.staleMs = options.staleMs ?? 10_000;
  }

  /** Run `fn` holding the lock; `fn` gets a check that the lock is still this holder's. */
  async hold<T>(fn: (stillMine: () => Promise<void>) => Promise<T>): Promise<T> {
    const nonce = randomBytes(16).toString("hex");
    await this.acquire(nonce);
    const stillMine = async () => {
      const record = await this.read();
      if (record === null || record.nonce !== nonce) {
        throw new LedgerError(`the ledger's lock ${this.path} is no longer this process's ` +
          "(it was broken as stale): nothing was written; try the report again");
      }
    };
    try {
      return await fn(stillMine);
    } finally {
      const record = await this.read().catch(() => null);
      if (record !== null && record.nonce === nonce) await fs.rm(this.path, { force: true });
    }
  }

  private async acquire(nonce: string): Promise<void> {
    const record: LockRecord = { pid: process.pid, host: hostname(), nonce };
    const start = Date.now();
    for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
      try {
        const handle = await fs.open(this.path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, FILE_MODE);
        try {
          await handle.writeFile(JSON.stringify(record));
          await handle.sync();
        } finally {
          await handle.close();
        }
        return;
      } catch (e) {
        if (code(e) !== "EEXIST") throw e;
      }
      await this.breakIfStale();
      if (Date.now() - start > this.timeoutMs) {
        const holder = await this.read().catch(() => null);
        throw new LedgerError(`the ledger's lock ${this.path} is held` +
          (holder ? ` by process ${holder.pid} on ${holder.host}` : "") +
          ` for more than ${this.timeoutMs} ms; if no process uses this ledger, remove the file`);
      }
      await sleep(wait);
    }
  }

  /** The lock's record; null if it is gone; a LockRecord with pid -1 if unreadable. */
  private async read(): Promise<LockRecord | null> {
    let text: string;
    try {
      text = await fs.readFile(this.path, "utf8");
    } catch (e) {
      if (code(e) === "ENOENT") return null;
      throw e;
    }
    try {
      const doc = JSON.parse(text) as LockRecord;
      if (Number.isSafeInteger(doc.pid) && typeof doc.host === "string" && typeof doc.nonce === "string") {
        return doc;
      }
    } catch {
      // an empty or torn record: judged by its age below
    }
    return { pid: -1, host: "", nonce: "" };
  }

  private async breakIfStale(): Promise<void> {
    const record = await this.read();
    if (record === null) return;
    if (record.pid === -1) {
      const stat = await fs.stat(this.path).catch(() => null);
      if (stat === null || Date.now() - stat.mtimeMs < this.staleMs) return;
    } else if (record.host !== hostname() || alive(record.pid)) {
      return;
    }
    const aside = `${this.path}.stale.${process.pid}.${randomBytes(6).toString("hex")}`;
    try {
      await fs.rename(this.path, aside);
    } catch (e) {
      if (code(e) === "ENOENT") return;
      throw e;
    }
    const taken = await new FileLock(aside).read();
    if (taken !== null && taken.nonce !== record.nonce) {
      await fs.link(aside, this.path).catch(() => undefined); // a live lock: put it back
    }
    await fs.rm(aside, { force: true });
  }
}

/** A {@link LedgerStore} in a folder under Node (module doc). */
export class NodeFileStore implements LedgerStore {
  readonly where: string;
  private readonly statePath: string;
  private readonly sentDir: string;
  private readonly lock: FileLock;
  private stillMine: (() => Promise<void>) | null = null;

  constructor(readonly dir: string, options: FileLockOptions = {}) {
    this.statePath = join(dir, "ledger.json");
    this.sentDir = join(dir, "sent");
    this.where = this.statePath;
    this.lock = new FileLock(`${this.statePath}.lock`, options);
  }

  /** Make the folders (mode 0700). */
  async prepare(): Promise<void> {
    for (const d of [this.dir, this.sentDir]) {
      await fs.mkdir(d, { recursive: true, mode: DIR_MODE });
      await fs.chmod(d, DIR_MODE);
    }
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.hold(async (stillMine) => {
      this.stillMine = stillMine;
      try {
        return await fn();
      } finally {
        this.stillMine = null;
      }
    });
  }

  private async mine(): Promise<void> {
    if (this.stillMine === null) throw new DprecError("a ledger write outside its lock");
    await this.stillMine();
  }

  async readState(): Promise<string | null> {
    try {
      return await fs.readFile(this.statePath, "utf8");
    } catch (e) {
      if (code(e) === "ENOENT") return null;
      throw new LedgerError(`cannot read the ledger ${this.statePath}: ${(e as Error).message}`);
    }
  }

  async writeState(text: string): Promise<void> {
    await this.mine();
    await atomicWrite(this.statePath, text);
  }

  private messagePath(name: string): string {
    return join(this.sentDir, `${name}.msg`);
  }

  async readMessage(name: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(await fs.readFile(this.messagePath(name)));
    } catch (e) {
      if (code(e) === "ENOENT") return null;
      throw new LedgerError(`cannot read the stored message ${this.messagePath(name)}: ` +
        `${(e as Error).message}`);
    }
  }

  async writeMessage(name: string, body: Uint8Array): Promise<void> {
    await this.mine();
    const path = this.messagePath(name);
    if ((await this.readMessage(name)) !== null) {
      throw new LedgerError(`a message is stored already at ${path}; it is never replaced`);
    }
    await atomicWrite(path, body);
  }
}

/** The ledger in folder `dir` under Node, with `budget` (epsilon; fixed when first made). */
export async function openNodeLedger(dir: string, budget: number,
                                     options: FileLockOptions = {}): Promise<StoredLedger> {
  const store = new NodeFileStore(dir, options);
  await store.prepare();
  return new StoredLedger(store, budget).init();
}
