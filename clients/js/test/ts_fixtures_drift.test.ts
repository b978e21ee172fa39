/** The committed clients/js/fixtures/ts/ are what the TS writer builds now (rerun
 * `npm run fixtures` after a deliberate wire change; Python's tests then check them). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { buildTsFixtures } from "./ts_fixtures.js";
import { fixturePath } from "./fixture_io.js";

test("the committed TypeScript fixtures are what the TS encoders, seal and steps write now",
  async () => {
    const built = await buildTsFixtures();
    assert.deepEqual(Object.keys(built).sort(), ["messages.json", "seal.json", "steps.json"]);
    for (const [name, text] of Object.entries(built)) {
      assert.equal(readFileSync(fixturePath("ts", name), "utf8"), text,
        `fixtures/ts/${name} differs from what the TS side writes: run npm run fixtures`);
    }
  });
