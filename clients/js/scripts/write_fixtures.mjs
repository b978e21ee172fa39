// Write clients/js/fixtures/ts/ from the built TS side (npm run fixtures builds first).
import { writeFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildTsFixtures } from "../dist/test/ts_fixtures.js";

const out = fileURLToPath(new URL("../fixtures/ts/", import.meta.url));
mkdirSync(out, { recursive: true });
for (const [name, text] of Object.entries(await buildTsFixtures())) {
  writeFileSync(out + name, text);
  console.log(`wrote clients/js/fixtures/ts/${name}`);
}
