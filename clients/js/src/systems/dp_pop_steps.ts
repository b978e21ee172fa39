/**
 * dp-pop's device half as {@link SystemSteps} of the {@link DeviceClient} (Python:
 * systems.dp_pop.deploy.PopDeployment's terms, client_step and scores):
 *
 * - terms: the secure sum's (terms.ts secureSumTerms: epsilon, delta, n_clients, min_honest
 *   under the policy) with the round's shape ({@link dpPopShape}: the proved upload's exact
 *   size, the largest broadcast, the truncation's delta cost);
 * - build: the proxy's published key and validity check, the server's key from the
 *   broadcast, then {@link buildDpPopUpload} (draw, prove, seal; every draw from the device's
 *   SecureSource);
 * - scores: the released noisy counts (popularity: the same for every user).
 *
 * The round's calibration (mu per share, T, S, B2, the proofs, the truncation's total
 * variation) is a pure function of the public config that Python computes with the PLD
 * accountant and SciPy's Skellam tails; this SDK does not recompute it: the embedding
 * application supplies {@link Calibrate} (e.g. a table built with the page from the config,
 * never a number a server sends at run time). The proxy's published check must equal it.
 */
import type { StepContext, SystemSteps } from "../device.js";
import type { ProtocolDescription } from "../description.js";
import { DprecError, SecureSumError } from "../errors.js";
import type { DpPopTerms } from "../prio3/contribution.js";
import { KEY_BYTES } from "../seal.js";
import { type DeviceReader, type ProtocolTerms, secureSumTerms } from "../terms.js";
import type { History } from "./history.js";
import { buildDpPopUpload, type DpPopRound, type DpPopSampling, type OnPlaintext } from "./dp_pop.js";
import { decodePopularity, dpPopShape } from "./dp_pop_model.js";

/** The proxy's secure-sum key in `GET /v1/round`'s `published` (Python: PUBLISHED_KEY). */
export const PUBLISHED_KEY = "secure_sum_proxy_key";

/** A round's calibration, computed from the config (module doc). */
export interface DpPopCalibration {
  readonly muShare: number;
  readonly terms: DpPopTerms;
  /** n (eta + eta_2): the truncated shares' total variation (the delta they cost). */
  readonly truncationTv: number;
}

export type Calibrate = (config: Readonly<Record<string, unknown>>, nItems: number) => DpPopCalibration;

function roundOf(calibrate: Calibrate, config: Readonly<Record<string, unknown>>, nItems: number):
    [DpPopRound, DpPopCalibration] {
  if (config["validity"] !== "prio3") {
    throw new SecureSumError(`this device sends proved dp-pop uploads only (validity = prio3), ` +
      `the config has validity = ${String(config["validity"])}`);
  }
  const sampling = config["sampling"];
  if (sampling !== "uniform" && sampling !== "recency") {
    throw new SecureSumError(`dp-pop's sampling is uniform or recency, got ${String(sampling)}`);
  }
  const cal = calibrate(config, nItems);
  if (cal.terms.k !== Math.min(Number(config["k"]), nItems)) {
    throw new SecureSumError(`the calibration's k (${cal.terms.k}) is not the config's`);
  }
  if (!(cal.muShare > 0 && Number.isFinite(cal.muShare))) {
    throw new SecureSumError(`a share's Poisson rate must be finite and > 0, got ${cal.muShare}`);
  }
  return [{ nItems, sampling: sampling as DpPopSampling, muShare: cal.muShare, terms: cal.terms }, cal];
}

function proxyKeyOf(published: Readonly<Record<string, unknown>>): Uint8Array {
  const raw = published[PUBLISHED_KEY];
  const ok = typeof raw === "string" && /^[0-9a-f]*$/i.test(raw) && raw.length === 2 * KEY_BYTES;
  if (!ok) {
    throw new SecureSumError(`the proxy publishes no ${KEY_BYTES}-byte secure-sum key ` +
      `(${PUBLISHED_KEY}): nothing to seal the Helper's share to`);
  }
  return new Uint8Array((raw as string).match(/../g)!.map((h) => parseInt(h, 16)));
}

/** Options of {@link dpPopSteps}. */
export interface DpPopStepOptions {
  /** Handed each built report's plaintext (v and y = v + z) before it is proved and sealed:
   * the device's own data, for the embedding application on the device (e.g. a test's
   * check of the released sum); the SDK sends nothing of it anywhere. */
  readonly onPlaintext?: OnPlaintext;
}

/** dp-pop's steps, its rounds calibrated by `calibrate` (module doc). */
export function dpPopSteps(calibrate: Calibrate, options: DpPopStepOptions = {}): SystemSteps {
  return {
    family: "dp_pop",
    terms(read: DeviceReader, info: ProtocolDescription) {
      const [round, cal] = roundOf(calibrate, info.config, info.n_items);
      return secureSumTerms(read, info, (epsilon) => dpPopShape(round, cal.truncationTv, epsilon), "dp-pop");
    },
    async build(c: StepContext): Promise<Uint8Array> {
      const [round] = roundOf(calibrate, c.terms.config, c.terms.nItems);
      const published = await c.proxyPublished();
      const model = decodePopularity(await c.artefact(), c.terms.nItems);
      return buildDpPopUpload(round, c.history, { proxyKey: proxyKeyOf(published),
        serverKey: model.serverKey, publishedValidity: published["validity"] }, c.round, c.rng,
        undefined, options.onPlaintext);
    },
    async scores(terms: ProtocolTerms, _history: History, artefact: Uint8Array): Promise<Float64Array> {
      const model = decodePopularity(artefact, terms.nItems);
      if (model.counts.length !== terms.nItems) {
        throw new DprecError("dp-pop has published no counts yet (its round is open)");
      }
      return model.counts;
    },
  };
}
