/**
 * The page's one door to the device SDK (clients/js/src): joining a dp-pop round and reading
 * the released counts go through the SDK alone (policy, IndexedDB ledger under Web Locks,
 * Prio3 proof, sealing to the two roles). The page itself computes nothing private.
 */

export interface Film { id: number; title: string; year: number | null }

export interface DemoConfig {
  server: string;
  proxy: string;
  crowd: number;
  seats: number;
  items: Film[];
}

export interface Seat { client_id: number; token: string }

/** The round's published terms, for display (the SDK checks them under its own policy). */
export interface Terms { epsilon: number; delta: number; k: number; minHonest: number; nItems: number }

export interface ReportOutcome {
  /** Bytes of the one sealed upload sent to the proxy. */
  bytes: number;
  /** Epsilon charged to the ledger for this report (0 for a re-send). */
  epsilon: number;
  spent: number;
  budget: number;
}

export interface Released { counts: Float64Array; contributors: number }

export class SdkMissing extends Error {
  constructor(what: string) {
    super(`${what} needs the TypeScript SDK's device client (clients/js/src), not merged yet`);
    this.name = "SdkMissing";
  }
}

function finite(x: unknown, what: string): number {
  if (typeof x !== "number" || !Number.isFinite(x)) throw new Error(`the server's ${what} is not a number`);
  return x;
}

/** GET /v1/protocol, for the words on the page. */
export async function fetchTerms(cfg: DemoConfig): Promise<Terms> {
  const r = await fetch(`${cfg.server}/v1/protocol`);
  if (!r.ok) throw new Error(`the server answered ${r.status} for its protocol`);
  const doc = (await r.json()) as { system?: unknown; n_items?: unknown; config?: Record<string, unknown> };
  if (doc.system !== "dp-pop" || typeof doc.config !== "object" || doc.config === null) {
    throw new Error("the server does not run dp-pop");
  }
  const c = doc.config;
  return {
    epsilon: finite(c["epsilon"], "epsilon"), delta: finite(c["delta"], "delta"),
    k: finite(c["k"], "k"), minHonest: finite(c["min_honest"], "min_honest"),
    nItems: finite(doc.n_items, "item count"),
  };
}

/** Report ``films`` in the open round through the SDK (charge before send). */
export async function joinRound(_cfg: DemoConfig, _seat: Seat, _films: number[]): Promise<ReportOutcome> {
  throw new SdkMissing("joining a round");
}

/** The released counts (the server's ``model`` artefact, decoded and checked by the SDK),
 * null while no round was released. */
export async function releasedCounts(_cfg: DemoConfig): Promise<Released | null> {
  throw new SdkMissing("reading the released counts");
}

/** The ledger's state on this device: (spent, budget), or null before the first report. */
export async function ledgerState(_cfg: DemoConfig, _seat: Seat): Promise<{ spent: number; budget: number } | null> {
  return null;
}
