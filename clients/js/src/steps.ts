/**
 * The device steps of dplcf-sp and fmf-ldp as {@link SystemSteps} of the {@link DeviceClient}:
 * the family's terms (terms.ts), its message (jscore's systems/dplcf_sp.ts and
 * systems/fmf_ldp.ts) and its on-device scores (systems/scores.ts's dplcfScores and
 * fmfScores, the ones checked against Python's), from the broadcast checked for the terms.
 *
 * dp-pop's steps are jsprio's (systems/dp_pop.ts), plugged in the same way.
 */
import type { StepContext, SystemSteps } from "./device.js";
import { DprecError } from "./errors.js";
import { type Flip, dplcfStep } from "./systems/dplcf_sp.js";
import { parseCellsToken } from "./systems/fmf_cells.js";
import { type FmfMechanism, fmfStep } from "./systems/fmf_ldp.js";
import type { History } from "./systems/history.js";
import { dplcfScores, fmfScores } from "./systems/scores.js";
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
      return dplcfScores(lists, history, user ? "user" : "item", Number(terms.values["neighbours"]));
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
      return fmfScores(itemMatrix(terms, artefact), history, Number(terms.values["alpha"]),
                       Number(terms.values["regularization"]));
    },
  };
}
