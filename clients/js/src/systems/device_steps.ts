/**
 * The dplcf-sp and fmf-ldp steps in the shape of jsdev's DeviceClient (src/device.ts's
 * `SystemSteps.build` and `.scores`, given its `StepContext`), typed structurally here so
 * that a `SystemSteps` is `{ family: "dplcf", terms: dplcfTerms, build: dplcfBuild,
 * scores: dplcfScoresOf }` (and the same for "fmf"). Python: the descriptors' client_step,
 * with_client_secret, decode_artefact and scores (dprec.systems.{dplcf,fmf}.deploy).
 */
import { BadReply, DprecError } from "../errors.js";
import { checkNeighbourListsFor, decodeNeighbourLists } from "../wire/dplcf.js";
import { checkItemMatrixFor, decodeItemMatrix, decodeItemMatrix64, type ItemMatrix } from "../wire/item_matrix.js";
import { dplcfStep, type Flip } from "./dplcf_sp.js";
import { parseCellsToken } from "./fmf_cells.js";
import { type FmfMechanism, fmfStep } from "./fmf_ldp.js";
import type { History } from "./history.js";
import type { RandomSource } from "./random_source.js";
import { dplcfScores, fmfScores } from "./scores.js";

/** What the steps read of jsdev's ProtocolTerms. */
export interface StepTerms {
  readonly nItems: number;
  readonly mechanism: string;
  readonly epsilon: number | null;
  readonly artefact: string;
  readonly values: Readonly<Record<string, number | string>>;
}

/** What the steps read of jsdev's StepContext. */
export interface StepContextLike {
  readonly terms: StepTerms;
  readonly history: History;
  readonly rng: RandomSource;
  readonly clientId: number;
  artefact(): Promise<Uint8Array>;
  clientSecret(): Promise<unknown>;
}

function value<T extends number | string>(terms: StepTerms, name: string, type: "number" | "string"): T {
  const v = terms.values[name];
  if (typeof v !== type) throw new DprecError(`the terms lack ${name} (${type})`);
  return v as T;
}

function epsilonOf(terms: StepTerms): number {
  if (terms.epsilon === null) {
    throw new DprecError(`mechanism ${terms.mechanism} has no epsilon: a device never sends without noise`);
  }
  return terms.epsilon;
}

/** DPLCF: the one ObfuscatedBits row of the user's flipped N bits. */
export async function dplcfBuild(ctx: StepContextLike): Promise<Uint8Array> {
  const t = ctx.terms;
  return dplcfStep({ nItems: t.nItems, mechanism: t.mechanism as Flip, epsilon: epsilonOf(t) },
    ctx.history, ctx.rng);
}

/** DPLCF's on-device scores from the neighbour lists' bytes. */
export async function dplcfScoresOf(terms: StepTerms, history: History, artefact: Uint8Array):
    Promise<Float64Array> {
  const hood = value<string>(terms, "neighbourhood", "string") as "item" | "user";
  const lists = checkNeighbourListsFor(decodeNeighbourLists(artefact), terms.nItems, hood === "user");
  return dplcfScores(lists, history, hood, value<number>(terms, "neighbours", "number"));
}

function itemMatrix(terms: StepTerms, bytes: Uint8Array): ItemMatrix {
  const f = value<number>(terms, "factors", "number");
  const m = terms.artefact === "item-matrix-f64" ? decodeItemMatrix64(bytes) : decodeItemMatrix(bytes);
  return checkItemMatrixFor(m, terms.nItems, f);
}

/** FMF-LDP: k reports on the broadcast V (cells=assigned: on the proxy's cells token). */
export async function fmfBuild(ctx: StepContextLike): Promise<Uint8Array> {
  const t = ctx.terms;
  const cells = value<string>(t, "cells", "string") as "chosen" | "assigned";
  let cellsToken: Uint8Array | undefined;
  if (cells === "assigned") {
    const secret = await ctx.clientSecret();
    try {
      const doc = typeof secret === "object" && secret !== null ? secret as Record<string, unknown> : {};
      cellsToken = parseCellsToken(doc["cells_token"]);
    } catch (e) {
      throw new BadReply(`the proxy's client secret: ${(e as Error).message}`);
    }
  }
  const V = itemMatrix(t, await ctx.artefact());
  return fmfStep({
    nItems: t.nItems, factors: value(t, "factors", "number"), k: value(t, "k", "number"),
    alpha: value(t, "alpha", "number"), regularization: value(t, "regularization", "number"),
    clip: value(t, "clip", "number"), mechanism: t.mechanism as FmfMechanism,
    epsilon: epsilonOf(t), cells, cellsToken,
  }, ctx.history, V, ctx.clientId, ctx.rng);
}

/** FMF-LDP's on-device scores from the item matrix's bytes. */
export async function fmfScoresOf(terms: StepTerms, history: History, artefact: Uint8Array):
    Promise<Float64Array> {
  return fmfScores(itemMatrix(terms, artefact), history, value(terms, "alpha", "number"),
    value(terms, "regularization", "number"));
}
