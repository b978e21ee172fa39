/** The DeviceClient's dplcf and fmf steps score with systems/scores.ts, the functions whose
 * numbers Python recomputes (tests/clients/js/test_ts_fixtures.py): their scores from the
 * committed cases' broadcasts are those cases' numbers, item and user neighbourhoods alike. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dplcfSteps, fmfSteps } from "../src/steps.js";
import type { ProtocolTerms } from "../src/terms.js";

interface ScoresCase {
  name: string; system: string; artefact: string; history: { items: number[]; values: number[] };
  scores: number[]; neighbourhood?: string; k?: number; alpha?: number; regularization?: number;
}

const CASES = (JSON.parse(readFileSync(new URL("../../fixtures/ts/steps.json", import.meta.url), "utf8")) as
  { scores: ScoresCase[] }).scores;
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));

/** The terms the scores read (the rest of ProtocolTerms is not used by a scores step). */
function termsOf(c: ScoresCase): ProtocolTerms {
  const nItems = c.system === "dplcf" ? 9 : 40; // ts_fixtures.ts scoresCases: n = 9, N = 40
  const values = c.system === "dplcf"
    ? { neighbourhood: c.neighbourhood!, neighbours: c.k! }
    : { factors: 4, alpha: c.alpha!, regularization: c.regularization! };
  return { nItems, values, artefact: "item-matrix-f64" } as unknown as ProtocolTerms;
}

test("the steps' scores are the Python-checked scores.ts numbers (item, user, fmf)", async () => {
  assert.deepEqual(CASES.map((c) => c.name).sort(),
                   ["ts-dplcf-scores-item", "ts-dplcf-scores-user", "ts-fmf-scores"]);
  for (const c of CASES) {
    const steps = c.system === "dplcf" ? dplcfSteps() : fmfSteps();
    const got = Array.from(await steps.scores!(termsOf(c), c.history, bytes(c.artefact)));
    assert.deepEqual(got, c.scores, c.name);
  }
});
