/**
 * The page's one door to the device SDK (clients/js/src): a {@link DeviceClient} with the
 * browser ledger (IndexedDB under Web Locks, one per seat), the device's default policy, the
 * HTTP endpoints and dp-pop's steps (Prio3 proof, sealed to the server and the proxy). The
 * page itself computes nothing private.
 *
 * dp-pop's calibration (mu per share, the check's T, S, B2) comes with the page
 * ({@link RoundCalibration}: computed by dprec's Python calibration for the one round this
 * demo runs, served from the page's own origin): the device accepts exactly that config and
 * refuses a server describing any other, naming the field (the SDK never takes a noise
 * parameter from the server).
 */
import { DeviceClient } from "../src/device.js";
import type { DpPopTerms } from "../src/prio3/contribution.js";
import { ProxyAPI, ServerAPI } from "../src/http.js";
import { openBrowserLedger } from "../src/ledger/indexeddb.js";
import type { StoredLedger } from "../src/ledger/ledger.js";
import { decodePopularity } from "../src/systems/dp_pop_model.js";
import type { OnPlaintext } from "../src/systems/dp_pop.js";
import { type DpPopCalibration, dpPopSteps } from "../src/systems/dp_pop_steps.js";

export interface Film { id: number; title: string; year: number | null }

/** The one round this page was built for and its calibration. */
export interface RoundCalibration {
  config: Record<string, unknown>;
  nItems: number;
  muShare: number;
  terms: DpPopTerms;
  truncationTv: number;
}

export interface DemoConfig {
  server: string;
  proxy: string;
  crowd: number;
  seats: number;
  round: RoundCalibration;
  items: Film[];
}

export interface Seat { client_id: number; token: string }

/** The round's published terms, for display (the SDK checks them under its own policy). */
export interface Terms {
  epsilon: number; delta: number; k: number; nItems: number;
  /** Null where the server describes no secure sum (the SDK's policy then decides). */
  minHonest: number | null;
}

export interface ReportResult {
  status: string;
  /** Bytes of the one sealed upload sent to the proxy (0 if nothing was sent). */
  bytes: number;
  /** Epsilon charged by this report (0 for a re-send). */
  epsilon: number;
  spent: number;
  budget: number;
}

export interface Released { counts: ArrayLike<number>; contributors: number }

/** The budget a new browser ledger starts with (epsilon, basic composition). */
export const BUDGET = 3;

/** The server's description, decoded strictly by the SDK, for the words on the page (the
 * SDK reads it again under the device's policy when reporting). */
export async function fetchTerms(cfg: DemoConfig): Promise<Terms> {
  const info = await new ServerAPI(cfg.server).protocol();
  if (info.family !== "dp_pop") throw new Error(`the server runs ${info.system}, not dp-pop`);
  const c = info.config;
  return { epsilon: c.epsilon, delta: c.delta, k: c.k, minHonest: c.min_honest, nItems: info.nItems };
}

const ledgers = new Map<number, Promise<StoredLedger>>();

/** The seat's ledger in this browser (opened once per page). */
export function ledgerOf(seat: Seat): Promise<StoredLedger> {
  let l = ledgers.get(seat.client_id);
  if (l === undefined) {
    l = openBrowserLedger(`demo-${seat.client_id}`, BUDGET);
    ledgers.set(seat.client_id, l);
  }
  return l;
}

/** The page's Calibrate: the round it was built for, any other config refused. */
function calibrateFor(round: RoundCalibration) {
  return (config: Readonly<Record<string, unknown>>, nItems: number): DpPopCalibration => {
    if (nItems !== round.nItems) {
      throw new Error(`the server describes ${nItems} films; this page was built for ${round.nItems}`);
    }
    const keys = new Set([...Object.keys(config), ...Object.keys(round.config)]);
    for (const key of [...keys].sort()) {
      if (config[key] !== round.config[key]) {
        throw new Error(`the server describes config.${key} = ${JSON.stringify(config[key])}; this ` +
          `page's device takes part only in the round it was built for (${JSON.stringify(round.config[key])})`);
      }
    }
    return { muShare: round.muShare, terms: round.terms, truncationTv: round.truncationTv };
  };
}

function device(cfg: DemoConfig, seat: Seat, ledger: StoredLedger, onPlaintext?: OnPlaintext): DeviceClient {
  const steps = dpPopSteps(calibrateFor(cfg.round), onPlaintext === undefined ? {} : { onPlaintext });
  return new DeviceClient({
    clientId: seat.client_id, token: seat.token, ledger,
    server: new ServerAPI(cfg.server), proxy: new ProxyAPI(cfg.proxy), steps: [steps],
  });
}

/** Report ``films`` in the open round through the SDK (charge before send); `onPlaintext`:
 * the SDK's hook for the report's plaintext (main.ts's test flag only). */
export async function joinRound(cfg: DemoConfig, seat: Seat, films: number[],
                                onPlaintext?: OnPlaintext): Promise<ReportResult> {
  const ledger = await ledgerOf(seat);
  const out = await device(cfg, seat, ledger, onPlaintext).report({ items: [...films].sort((a, b) => a - b) });
  return { status: out.status, bytes: out.bytes, epsilon: out.epsilon,
           spent: await ledger.spent(), budget: ledger.budget };
}

/** The released counts (the server's ``model`` artefact, fetched and size-checked by the
 * SDK), null while no round was released. */
export async function releasedCounts(cfg: DemoConfig): Promise<Released | null> {
  const art = await new ServerAPI(cfg.server).artefact("model", { limit: 64 + 8 * cfg.round.nItems });
  const model = decodePopularity(art.data, cfg.round.nItems);
  return model.counts.length > 0 ? model : null;
}

/** The ledger's state on this device. */
export async function ledgerState(seat: Seat): Promise<{ spent: number; budget: number }> {
  const ledger = await ledgerOf(seat);
  return { spent: await ledger.spent(), budget: ledger.budget };
}
