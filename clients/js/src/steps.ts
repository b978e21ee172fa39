/**
 * The device steps of dplcf-sp and fmf-ldp as {@link SystemSteps} of the {@link DeviceClient}:
 * the family's terms (terms.ts), its message (jscore's systems/dplcf_sp.ts and
 * systems/fmf_ldp.ts) and its on-device scores.
 *
 * - DPLCF, item neighbourhood (Eq. 12): score(i) = sum over i's K listed neighbours j of
 *   sim(i, j) r_uj; user neighbourhood: the sum of the K largest sim(i, j) over the user's
 *   items j != i (Python: dprec.models.itemknn, summed here in float64, not float32).
 * - FMF-LDP: score(i) = x_u . v_i with x_u of Eq. 4 (systems/fmf_ldp.ts's userVector).
 *
 * dp-pop's steps are jsprio's (systems/dp_pop.ts), plugged in the same way.
 */
import type { StepContext, SystemSteps } from "./device.js";
import { DprecError } from "./errors.js";
import { type Flip, dplcfStep } from "./systems/dplcf_sp.js";
import { parseCellsToken } from "./systems/fmf_cells.js";
import { type FmfMechanism, checkItemFactors, fmfStep, userVector } from "./systems/fmf_ldp.js";
import { type History, checkHistory } from "./systems/history.js";
import { dplcfTerms, fmfTerms, type ProtocolTerms } from "./terms.js";
import { checkNeighbourListsFor, decodeNeighbourLists } from "./wire/dplcf.js";
import { checkItemMatrixFor, decodeItemMatrix, decodeItemMatrix64, type ItemMatrix } from "./wire/item_matrix.js";

function epsilonOf(terms: ProtocolTerms): number {
  if (terms.epsilon === null) throw new DprecError(`${terms.system} has no mechanism epsilon`);
  return terms.epsilon;
}

/** DPLCF (dplcf-sp, dplcf-oue, ...): N flipped bits; scores from the neighbour lists. */
export function dplcfSteps(): SystemSteps {
  return {
    family: "dplcf",
    terms: dplcfTerms,
    async build(c: StepContext): Promise<Uint8Array> {
      return dplcfStep({ nItems: c.terms.nItems, mechanism: c.terms.mechanism as Flip,
                         epsilon: epsilonOf(c.terms) }, c.history, c.rng);
    },
    async scores(terms: ProtocolTerms, history: History, artefact: Uint8Array): Promise<Float64Array> {
      const user = terms.values["neighbourhood"] === "user";
      const lists = checkNeighbourListsFor(decodeNeighbourLists(artefact), terms.nItems, user);
      const h = checkHistory(history, terms.nItems);
      const n = terms.nItems;
      const out = new Float64Array(n);
      if (!user) {
        const r = new Float64Array(n);
        h.items.forEach((i, j) => { r[i] = h.values[j] as number; });
        for (let i = 0; i < n; i++) {
          for (let s = 0; s < lists.k; s++) {
            const j = lists.indices[i * lists.k + s] as number;
            if (j >= 0 && j < n) out[i] = (out[i] as number) + (lists.sims[i * lists.k + s] as number) * (r[j] as number);
          }
        }
        return out;
      }
      const full = lists.full as Float32Array;
      const k = Number(terms.values["neighbours"]);
      for (let i = 0; i < n; i++) {
        const sims = Array.from(h.items, (j) => (j === i ? 0 : (full[i * n + j] as number)));
        sims.sort((a, b) => b - a);
        out[i] = sims.slice(0, k).reduce((s, x) => s + x, 0);
      }
      return out;
    },
  };
}

function itemMatrix(terms: ProtocolTerms, artefact: Uint8Array): ItemMatrix {
  const f = Number(terms.values["factors"]);
  const m = terms.artefact === "item-matrix-f64" ? decodeItemMatrix64(artefact) : decodeItemMatrix(artefact);
  return checkItemMatrixFor(m, terms.nItems, f);
}

/** FMF-LDP: k reports per epoch from the broadcast V; scores x_u . v_i. */
export function fmfSteps(): SystemSteps {
  return {
    family: "fmf",
    terms: fmfTerms,
    async build(c: StepContext): Promise<Uint8Array> {
      const t = c.terms;
      const v = t.values;
      const cells = v["cells"] === "assigned" ? "assigned" : "chosen";
      const cellsToken = cells === "assigned"
        ? parseCellsToken((await c.clientSecret() as Record<string, unknown>)["cells_token"]) : undefined;
      return fmfStep({
        nItems: t.nItems, factors: Number(v["factors"]), k: Number(v["k"]),
        alpha: Number(v["alpha"]), regularization: Number(v["regularization"]),
        clip: Number(v["clip"]), mechanism: t.mechanism as FmfMechanism,
        epsilon: epsilonOf(t), cells, ...(cellsToken !== undefined ? { cellsToken } : {}),
      }, c.history, itemMatrix(t, await c.artefact()), c.clientId, c.rng);
    },
    async scores(terms: ProtocolTerms, history: History, artefact: Uint8Array): Promise<Float64Array> {
      const f = Number(terms.values["factors"]);
      const V = checkItemFactors(itemMatrix(terms, artefact), terms.nItems, f);
      const x = userVector(V, f, checkHistory(history, terms.nItems),
                           Number(terms.values["alpha"]), Number(terms.values["regularization"]));
      const out = new Float64Array(terms.nItems);
      for (let i = 0; i < terms.nItems; i++) {
        let s = 0;
        for (let a = 0; a < f; a++) s += (x[a] as number) * (V[i * f + a] as number);
        out[i] = s;
      }
      return out;
    },
  };
}
