/** The DeviceClient loads libsodium itself before a step builds (and may seal) its message:
 * an embedding application that never calls ready() still reports. This file runs in its own
 * process (`node --test` isolates each file), so no other test has loaded libsodium here. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeviceClient, type StepContext } from "../src/device.js";
import { MalformedUploadError } from "../src/errors.js";
import { openNodeLedger } from "../src/node.js";
import { OVERHEAD, keyId, seal } from "../src/seal.js";
import { uploadBytes } from "../src/terms.js";
import { dplcf } from "./helpers/descriptions.js";
import { FakeProxy, FakeServer, RandomSteps } from "./helpers/services.js";

const N = 1000; // an upload of 6 + 8 + 125 bytes: room for a sealed box
/** RFC 7748 section 6.1: Alice's X25519 public key. */
const RECIPIENT = new Uint8Array(Buffer.from(
  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", "hex"));

/** A step whose message is a sealed box of the round's exact size. */
class SealingSteps extends RandomSteps {
  override async build(c: StepContext): Promise<Uint8Array> {
    this.builds += 1;
    return seal(RECIPIENT, c.rng.bytes(uploadBytes(c.terms, c.round) - OVERHEAD), new Uint8Array(0));
  }
}

test("a step that seals works without the caller awaiting ready(): the device loads libsodium", async () => {
  // the precondition: in this process libsodium is not loaded yet, and sealing refuses
  assert.throws(() => seal(RECIPIENT, new Uint8Array(1), new Uint8Array(0)),
                (e: unknown) => e instanceof MalformedUploadError && /await ready\(\)/.test(e.message));
  const ledger = await openNodeLedger(join(mkdtempSync(join(tmpdir(), "dprec-ready-")), "state"), 2 * N);
  const proxy = new FakeProxy();
  const steps = new SealingSteps("dplcf");
  const client = new DeviceClient({ clientId: 7, token: "secret-token", server: new FakeServer({ ...dplcf({}, N).document }),
                                    proxy, ledger, steps: [steps] });
  const out = await client.report({ items: [3, 17, 42] });
  assert.equal(out.status, "sent");
  assert.equal(steps.builds, 1);
  assert.equal(proxy.received[0]!.body.length, 6 + 8 + N / 8);
  // a sealed box: ephemeral key, then the recipient's id
  assert.deepEqual(proxy.received[0]!.body.subarray(32, 40), keyId(RECIPIENT));
});
