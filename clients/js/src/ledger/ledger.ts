/**
 * A user's privacy ledger on the device: one charge per key, never over budget, whatever
 * number of tabs or processes share it (Python: dprec.client.ledger.DiskLedger and
 * dprec.client.runs.SentMessages).
 *
 * The ledger holds the user's budget (epsilon, basic composition, Python's slack: a charge
 * fits while spent + eps <= budget (1 + 1e-9)), one charge per key (the (run, round) of a
 * message the device stored to send), the notes beside charges, the run the device is pinned
 * to, and every message it stored, kept so that a round asked again gets the same bytes.
 *
 * Every read and every decision runs in {@link Ledger.locked}: the store's exclusive lock
 * (Web Locks in a browser, a lock file under Node) is held and the state is re-read from
 * the store inside it, so a charge is decided on what is stored now, never on a copy loaded
 * earlier: two tabs or processes can never both spend the last of the budget. Each write is
 * atomic (the old state or the new one, never a torn one). A stored state that is not
 * exactly this format (unknown field, bad number, a note without its charge, another
 * budget) is refused with a {@link LedgerError}, never reset: a reset would refund budget.
 */
import { BudgetExceededError, DprecError, LedgerError } from "../errors.js";

/** The stored format's version (the same JSON as Python's DiskLedger, plus `run`). */
export const LEDGER_FORMAT = 1;
const REL_TOL = 1e-9;
const MAX_KEY = 512;
const RUN = /^[0-9a-f]{64}$/;
const FIELDS = new Set(["format", "budget", "spent", "charges", "notes", "run"]);

/** One charge: its key, its epsilon and what it rests on (if noted). */
export interface LedgerEntry {
  readonly key: string;
  readonly epsilon: number;
  readonly note?: string;
}

/** Where a ledger lives: an exclusive section and atomic reads and writes (Node file,
 * IndexedDB). */
export interface LedgerStore {
  /** Names the store in errors (a path, a database). */
  readonly where: string;
  /** Run `fn` holding the store's exclusive lock (one holder across tabs or processes). */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** The stored state's text, null if none yet. */
  readState(): Promise<string | null>;
  /** Replace the state's text atomically and durably. */
  writeState(text: string): Promise<void>;
  /** The message stored under `name`, null if none. */
  readMessage(name: string): Promise<Uint8Array | null>;
  /** Store `body` under `name` atomically (a LedgerError if one is stored: never replaced). */
  writeMessage(name: string, body: Uint8Array): Promise<void>;
}

/** The ledger as read inside its lock: what the device decides a report on. */
export interface LedgerView {
  readonly budget: number;
  spent(): number;
  remaining(): number;
  charged(key: string): boolean;
  /** How many keys starting with `prefix` (a run's, `<run>/`) are charged. */
  countUnder(prefix: string): number;
  /** Would a new charge of `eps` stay within the budget? */
  canCharge(eps: number): boolean;
  entries(): LedgerEntry[];
  /** The pinned run, null before the first report. */
  pinned(): string | null;
  /** Pin `run` (replacing any pinned one); stored before it returns. */
  pin(run: string): Promise<void>;
  /** The message stored for `round` of `run`, null if none. */
  message(run: string, round: number): Promise<Uint8Array | null>;
  /** Keep `body` as the message of `round` of `run` (once; stored before it returns). */
  storeMessage(run: string, round: number, body: Uint8Array): Promise<void>;
  /** Charge `eps` under `key` (with `note`), stored before it returns; false if `key` was
   * charged before (nothing changes); BudgetExceededError past the budget (nothing changes). */
  charge(key: string, eps: number, note?: string): Promise<boolean>;
}

/** One user's ledger (module doc). */
export interface Ledger {
  readonly budget: number;
  /** Run `fn` on the state re-read under the exclusive lock, holding it throughout. Not
   * re-entrant: inside `fn`, use the view (a nested `locked` on the same store waits for
   * the lock it is holding). */
  locked<T>(fn: (view: LedgerView) => Promise<T>): Promise<T>;
  charge(key: string, eps: number, note?: string): Promise<boolean>;
  spent(): Promise<number>;
  remaining(): Promise<number>;
  entries(): Promise<LedgerEntry[]>;
}

interface State {
  charges: Map<string, number>;
  notes: Map<string, string>;
  run: string | null;
}

/** Sum with Neumaier's compensation (close to Python's math.fsum). */
export function exactSum(values: Iterable<number>): number {
  let sum = 0;
  let carry = 0;
  for (const v of values) {
    const t = sum + v;
    carry += Math.abs(sum) >= Math.abs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  return sum + carry;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The state stored as `text`, checked field by field; LedgerError if anything is off. */
export function decodeState(text: string, budget: number, where: string): State {
  const refuse = (why: string): never => {
    throw new LedgerError(`the ledger at ${where} is unreadable (${why}); refusing to guess ` +
      "what was spent: restore it from a backup, or move it away to start a new ledger " +
      "knowingly");
  };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    refuse(`not JSON: ${(e as Error).message}`);
  }
  if (!isPlainObject(doc)) return refuse("not a JSON object");
  const unknown = Object.keys(doc).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) refuse(`unknown field(s) ${unknown.join(", ")}`);
  if (doc["format"] !== LEDGER_FORMAT) refuse(`format ${JSON.stringify(doc["format"])}, not ${LEDGER_FORMAT}`);
  if (typeof doc["budget"] !== "number" || !(doc["budget"] > 0) || !Number.isFinite(doc["budget"])) {
    refuse(`budget ${JSON.stringify(doc["budget"])} is not a finite number > 0`);
  }
  if (doc["budget"] !== budget) {
    throw new LedgerError(`the ledger at ${where} has budget ${doc["budget"]}, not ${budget}: ` +
      "a budget is fixed when the ledger is made");
  }
  const charges = new Map<string, number>();
  if (!isPlainObject(doc["charges"])) return refuse("charges is not an object");
  for (const [key, eps] of Object.entries(doc["charges"])) {
    if (key.length === 0 || key.length > MAX_KEY) refuse(`a charge key of length ${key.length}`);
    if (typeof eps !== "number" || !Number.isFinite(eps) || eps < 0) {
      refuse(`charge ${JSON.stringify(key)} is ${JSON.stringify(eps)}, not a finite number >= 0`);
    }
    charges.set(key, eps as number);
  }
  const notes = new Map<string, string>();
  const rawNotes = doc["notes"] ?? {};
  if (!isPlainObject(rawNotes)) return refuse("notes is not an object");
  for (const [key, note] of Object.entries(rawNotes)) {
    if (typeof note !== "string" || !charges.has(key)) refuse(`note ${JSON.stringify(key)} has no charge or is not text`);
    notes.set(key, note as string);
  }
  const spent = exactSum(charges.values());
  const stated = doc["spent"];
  if (stated !== undefined && (typeof stated !== "number"
      || Math.abs(stated - spent) > REL_TOL * Math.max(1, Math.abs(spent)))) {
    refuse(`spent ${JSON.stringify(stated)} is not the sum of the charges, ${spent}`);
  }
  const run = doc["run"] ?? null;
  if (run !== null && (typeof run !== "string" || !RUN.test(run))) refuse("run is not a run id");
  return { charges, notes, run: run as string | null };
}

/** The state as stored: Python's DiskLedger JSON, sorted keys, plus the pinned run. */
export function encodeState(state: State, budget: number): string {
  const sorted = <T>(m: Map<string, T>) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const doc: Record<string, unknown> = {
    budget, charges: sorted(state.charges), format: LEDGER_FORMAT,
    ...(state.notes.size > 0 ? { notes: sorted(state.notes) } : {}),
    ...(state.run !== null ? { run: state.run } : {}),
    spent: exactSum(state.charges.values()),
  };
  return JSON.stringify(doc, null, 1);
}

function messageName(run: string, round: number): string {
  if (!RUN.test(run)) throw new DprecError(`a run id is 64 hex digits, got ${JSON.stringify(run)}`);
  if (!Number.isSafeInteger(round) || round < 0) {
    throw new DprecError(`a round is an integer >= 0, got ${round}`);
  }
  return `${run}-${round}`;
}

/** A {@link Ledger} on a {@link LedgerStore} (module doc). */
export class StoredLedger implements Ledger {
  /** `budget`: the user's epsilon, fixed when the ledger is first made. */
  constructor(readonly store: LedgerStore, readonly budget: number) {
    if (typeof budget !== "number" || !(budget > 0) || !Number.isFinite(budget)) {
      throw new DprecError(`budget must be a finite number > 0, got ${budget}`);
    }
  }

  /** Create the stored state if there is none (checks an existing one). */
  async init(): Promise<this> {
    await this.locked(async () => undefined);
    return this;
  }

  async locked<T>(fn: (view: LedgerView) => Promise<T>): Promise<T> {
    return this.store.exclusive(async () => {
      const text = await this.store.readState();
      let state: State;
      if (text === null) {
        state = { charges: new Map(), notes: new Map(), run: null };
        await this.store.writeState(encodeState(state, this.budget));
      } else {
        state = decodeState(text, this.budget, this.store.where);
      }
      return fn(this.view(state));
    });
  }

  private view(state: State): LedgerView {
    const { store, budget } = this;
    const spent = () => exactSum(state.charges.values());
    const save = () => store.writeState(encodeState(state, budget));
    const canCharge = (eps: number) => spent() + eps <= budget * (1 + REL_TOL);
    return {
      budget,
      spent,
      remaining: () => budget - spent(),
      charged: (key) => state.charges.has(key),
      countUnder: (prefix) => [...state.charges.keys()].filter((k) => k.startsWith(prefix)).length,
      canCharge,
      entries: () => [...state.charges].map(([key, epsilon]) => {
        const note = state.notes.get(key);
        return note === undefined ? { key, epsilon } : { key, epsilon, note };
      }),
      pinned: () => state.run,
      pin: async (run) => {
        if (!RUN.test(run)) throw new DprecError(`a run id is 64 hex digits, got ${run}`);
        const before = state.run;
        state.run = run;
        try {
          await save();
        } catch (e) {
          state.run = before;
          throw e;
        }
      },
      message: (run, round) => store.readMessage(messageName(run, round)),
      storeMessage: (run, round, body) => store.writeMessage(messageName(run, round), body),
      charge: async (key, eps, note) => {
        if (typeof eps !== "number" || !(eps >= 0) || !Number.isFinite(eps)) {
          throw new DprecError(`eps must be a finite number >= 0, got ${eps}`);
        }
        if (typeof key !== "string" || key.length === 0 || key.length > MAX_KEY) {
          throw new DprecError(`a ledger key is 1 to ${MAX_KEY} characters, got ${JSON.stringify(key)}`);
        }
        if (state.charges.has(key)) return false;
        if (!canCharge(eps)) {
          throw new BudgetExceededError(`charging ${eps} under ${key} would pass the budget: ` +
            `${spent()} of ${budget} spent`);
        }
        state.charges.set(key, eps);
        if (note !== undefined) state.notes.set(key, String(note));
        try {
          await save();
        } catch (e) {
          state.charges.delete(key);
          state.notes.delete(key);
          throw e;
        }
        return true;
      },
    };
  }

  charge(key: string, eps: number, note?: string): Promise<boolean> {
    return this.locked((v) => v.charge(key, eps, note));
  }

  spent(): Promise<number> {
    return this.locked(async (v) => v.spent());
  }

  remaining(): Promise<number> {
    return this.locked(async (v) => v.remaining());
  }

  entries(): Promise<LedgerEntry[]> {
    return this.locked(async (v) => v.entries());
  }
}
