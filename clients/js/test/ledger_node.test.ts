import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir, hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BudgetExceededError, LedgerError } from "../src/errors.js";
import { openNodeLedger } from "../src/node.js";

const RUN = "ab".repeat(32);
const folder = () => join(mkdtempSync(join(tmpdir(), "dprec-ledger-")), "state");

test("a key is charged once; the state is Python's DiskLedger JSON, private", async () => {
  const dir = folder();
  const ledger = await openNodeLedger(dir, 10);
  assert.equal(await ledger.charge(`${RUN}/round-0`, 2.5, "why"), true);
  assert.equal(await ledger.charge(`${RUN}/round-0`, 2.5), false);
  assert.equal(await ledger.spent(), 2.5);
  assert.equal(await ledger.remaining(), 7.5);
  assert.deepEqual(await ledger.entries(), [{ key: `${RUN}/round-0`, epsilon: 2.5, note: "why" }]);
  const doc = JSON.parse(readFileSync(join(dir, "ledger.json"), "utf8"));
  assert.deepEqual(doc, { budget: 10, charges: { [`${RUN}/round-0`]: 2.5 }, format: 1,
                          notes: { [`${RUN}/round-0`]: "why" }, spent: 2.5 });
  assert.equal(statSync(join(dir, "ledger.json")).mode & 0o777, 0o600);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(existsSync(join(dir, "ledger.json.lock")), false);
  const again = await openNodeLedger(dir, 10);
  assert.equal(await again.spent(), 2.5);
  await assert.rejects(openNodeLedger(dir, 11), /a budget is fixed when the ledger is made/);
});

test("a charge past the budget changes nothing; 10 x 0.1 fits a budget of 1", async () => {
  const dir = folder();
  const ledger = await openNodeLedger(dir, 2);
  await ledger.charge("a", 1.5);
  const before = readFileSync(join(dir, "ledger.json"), "utf8");
  await assert.rejects(ledger.charge("b", 1), BudgetExceededError);
  assert.equal(readFileSync(join(dir, "ledger.json"), "utf8"), before);
  assert.equal(await ledger.spent(), 1.5);
  const tenths = await openNodeLedger(folder(), 1);
  for (let i = 0; i < 10; i++) assert.equal(await tenths.charge(`k${i}`, 0.1), true);
  await assert.rejects(tenths.charge("k10", 1e-6), BudgetExceededError);
  await assert.rejects(ledger.charge("c", -1), /eps must be/);
  await assert.rejects(ledger.charge("c", Number.NaN), /eps must be/);
});

test("a stored message is kept bit for bit and never replaced", async () => {
  const ledger = await openNodeLedger(folder(), 5);
  const body = Uint8Array.from([0, 255, 7, 1, 2, 3]);
  await ledger.locked((v) => v.storeMessage(RUN, 0, body));
  const back = await ledger.locked((v) => v.message(RUN, 0));
  assert.deepEqual(back, body);
  assert.equal(await ledger.locked((v) => v.message(RUN, 1)), null);
  await assert.rejects(ledger.locked((v) => v.storeMessage(RUN, 0, Uint8Array.of(9))), /never replaced/);
  await assert.rejects(ledger.locked((v) => v.storeMessage("../x", 0, body)), /64 hex/);
});

test("a corrupt or hostile ledger file is refused, never reset", async () => {
  const hostile = [
    "not json", "[]", "{}",
    JSON.stringify({ format: 2, budget: 5, charges: {} }),
    JSON.stringify({ format: 1, budget: 5, charges: { a: -1 } }),
    JSON.stringify({ format: 1, budget: 5, charges: { a: "1" } }),
    JSON.stringify({ format: 1, budget: 5, charges: [] }),
    JSON.stringify({ format: 1, budget: 5, charges: { a: 1 }, notes: { b: "x" } }),
    JSON.stringify({ format: 1, budget: 5, charges: { a: 1 }, spent: 0 }),
    JSON.stringify({ format: 1, budget: 5, charges: { a: 1 }, refund: true }),
    JSON.stringify({ format: 1, budget: 5, charges: {}, run: "../../etc" }),
    '{"format": 1, "budget": 5, "charges": {"a": 1e999}}',
  ];
  for (const text of hostile) {
    const dir = folder();
    await openNodeLedger(dir, 5);
    writeFileSync(join(dir, "ledger.json"), text);
    await assert.rejects(openNodeLedger(dir, 5), LedgerError, text);
    assert.equal(readFileSync(join(dir, "ledger.json"), "utf8"), text, "never reset");
  }
});

test("two async writers on one folder never double-spend", async () => {
  const dir = folder();
  const [a, b] = await Promise.all([openNodeLedger(dir, 10), openNodeLedger(dir, 10)]);
  const tries = Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).charge(`k${i}`, 1)
    .then(() => 1, (e) => { if (e instanceof BudgetExceededError) return 0; throw e; }));
  const charged = (await Promise.all(tries)).reduce((s, x) => s + x, 0);
  assert.equal(charged, 10);
  assert.equal(await a.spent(), 10);
});

test("two processes on one folder never double-spend (15 tries each, budget 10)", async () => {
  const dir = folder();
  await openNodeLedger(dir, 10);
  const worker = fileURLToPath(new URL("./helpers/ledger_worker.js", import.meta.url));
  const run = (tag: string) => new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [worker, dir, "10", tag, "15"]);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { err += d; });
    child.on("close", (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(err))));
  });
  const [x, y] = await Promise.all([run("p"), run("q")]);
  assert.equal(x + y, 10, `${x} + ${y}`);
  const doc = JSON.parse(readFileSync(join(dir, "ledger.json"), "utf8"));
  assert.equal(Object.keys(doc.charges).length, 10);
  assert.equal(doc.spent, 10);
});

test("a lock left by a dead process is broken; a live holder's is waited for", async () => {
  const dir = folder();
  const ledger = await openNodeLedger(dir, 5, { timeoutMs: 300 });
  const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  const lock = join(dir, "ledger.json.lock");
  writeFileSync(lock, JSON.stringify({ pid: Number(dead.stdout), host: hostname(), nonce: "x" }));
  assert.equal(await ledger.charge("a", 1), true);
  assert.equal(existsSync(lock), false);
  writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), nonce: "live" }));
  await assert.rejects(ledger.charge("b", 1), /is held by process/);
  assert.equal(readFileSync(lock, "utf8").includes("live"), true, "a live lock is kept");
  writeFileSync(lock, JSON.stringify({ pid: 1, host: "another-host", nonce: "y" }));
  await assert.rejects(ledger.charge("b", 1), /on another-host/);
});

test("a ledger written by Python's DiskLedger is read as is, and charged on", async () => {
  // Python: DiskLedger(path, 5.0); charge("r/round-0", 1.5, "why"); charge("r/round-1", 0.1)
  const python = '{\n "budget": 5.0,\n "charges": {\n  "r/round-0": 1.5,\n  "r/round-1": 0.1\n },\n' +
    ' "format": 1,\n "notes": {\n  "r/round-0": "why"\n },\n "spent": 1.6\n}';
  const dir = folder();
  await openNodeLedger(dir, 5);
  writeFileSync(join(dir, "ledger.json"), python);
  const ledger = await openNodeLedger(dir, 5);
  assert.deepEqual(await ledger.entries(), [{ key: "r/round-0", epsilon: 1.5, note: "why" },
                                            { key: "r/round-1", epsilon: 0.1 }]);
  assert.ok(Math.abs((await ledger.spent()) - 1.6) < 1e-12);
  assert.equal(await ledger.charge("r/round-0", 1), false);
  await assert.rejects(ledger.charge("r/round-2", 3.5), BudgetExceededError);
  assert.equal(await ledger.charge("r/round-2", 3.4), true);
});

test("a key named __proto__ is an ordinary charge (no prototype is touched)", async () => {
  const dir = folder();
  await openNodeLedger(dir, 5);
  writeFileSync(join(dir, "ledger.json"), '{"format": 1, "budget": 5, "charges": {"__proto__": 2}}');
  const ledger = await openNodeLedger(dir, 5);
  assert.equal(await ledger.spent(), 2);
  assert.equal(await ledger.charge("__proto__", 1), false);
  assert.equal(await ledger.charge("x", 1), true);
  const doc = JSON.parse(readFileSync(join(dir, "ledger.json"), "utf8"));
  assert.deepEqual(Object.keys(doc.charges).sort(), ["__proto__", "x"]);
  assert.equal(({} as Record<string, unknown>)["x"], undefined);
});
