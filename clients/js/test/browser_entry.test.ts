/** The package's entry (src/index.ts) is what a page bundles: it must build for the browser
 * platform with no Node built-in (the file ledger lives in src/node.ts). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

test("the SDK's entry bundles for a browser without Node built-ins", async () => {
  const entry = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
  const out = await build({ entryPoints: [entry], bundle: true, platform: "browser",
                            format: "esm", write: false, logLevel: "silent", metafile: true });
  const inputs = Object.keys(out.metafile.inputs);
  assert.ok(inputs.some((p) => p.endsWith("ledger/indexeddb.ts")));
  assert.ok(!inputs.some((p) => p.includes("node_file")), "the Node ledger stays out");
  assert.ok((out.outputFiles[0]?.text.length ?? 0) > 10_000);
});
