/** Decoders trust nothing: every mutation of a valid message (a flipped byte, a cut, bytes
 * appended, a random length field) either decodes to a message that re-encodes to the same
 * bytes, or is refused with a MessageError, never another exception. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MessageError, decodeMessage } from "../src/index.js";
import { ENCODERS, fromHex, input, plain, readFixture } from "./fixture_io.js";
import { SeededSource } from "./seeded_source.js";

const valid = readFixture<{ valid: { name: string; hex: string }[] }>("python", "messages.json").valid;

function mutate(data: Uint8Array, src: SeededSource): Uint8Array {
  const kind = src.integers(4);
  if (kind === 0) {
    const out = data.slice();
    out[src.integers(out.length)]! ^= 1 + src.integers(255);
    return out;
  }
  if (kind === 1) return data.slice(0, src.integers(data.length));
  if (kind === 2) return Uint8Array.from([...data, ...src.bytes(1 + src.integers(8))]);
  const out = data.slice(); // overwrite 4 bytes after the header: a count or a length field
  const at = 6 + src.integers(Math.max(1, Math.min(12, out.length - 9)));
  out.set(src.bytes(4).subarray(0, Math.max(0, Math.min(4, out.length - at))), at);
  return out;
}

test("2,600 mutated messages: a valid message or a MessageError, nothing else", () => {
  const src = new SeededSource("fuzz");
  let refused = 0;
  for (const v of valid) {
    const data = fromHex(v.hex);
    for (let j = 0; j < 200; j++) {
      const bad = mutate(data, src);
      try {
        const m = decodeMessage(bad);
        const again = ENCODERS[m.kind]!(input(plain(m.message)));
        assert.deepEqual(again, bad, `${v.name}: a decoded mutation re-encodes to its bytes`);
      } catch (e) {
        if (!(e instanceof MessageError)) throw e;
        refused++;
      }
    }
  }
  assert.ok(refused > 1000, `${refused} refused`);
});
