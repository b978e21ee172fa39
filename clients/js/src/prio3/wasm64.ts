/**
 * Field64's hot loop as WebAssembly (64-bit integer multiplication, which JavaScript lacks):
 * the module is assembled here from its instructions (no binary blob, no build step) and
 * compiled once; where WebAssembly is unavailable (or a content-security policy without
 * 'wasm-unsafe-eval' refuses it) {@link wasmKernel} answers null and the callers use the
 * 32-bit-limb JavaScript arithmetic of field64.ts, which gives the same field elements. The
 * module has under 1 KB, so it compiles synchronously on a browser's main thread (Chromium
 * refuses a synchronous compile above 4 KB there).
 *
 * Exported function (all pointers are byte offsets into the module's memory, elements are
 * 8-byte little-endian words, as field64's encoding):
 *
 *   wr(x0, x1, n, out, pairs, np, consts, hasMid): for t < n,
 *     out[t] += x0[t] * (x1[t] - mid)^hasMid * prod_k (u + pairs[k]),  u = x1[t]^2 - total x1[t]
 *   (WeightedRange's pairing, gadgets.ts), consts = [total, mid].
 *
 *   bf(a, n, first, tw): the NTT's radix-2 levels m = first..n on a, in place (ntt.ts).
 *
 * mul: the 128-bit product from four 32 x 32 products, reduced by 2^64 = 2^32 - 1 and
 * 2^96 = -1 (mod p); add and sub with one conditional correction each (select).
 */

const P = 0xffffffff00000001n;

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(v: bigint): number[] {
  const out: number[] = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    if ((v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const I64 = 0x7e, I32 = 0x7f;
const op = {
  get: (i: number) => [0x20, ...uleb(i)], set: (i: number) => [0x21, ...uleb(i)],
  tee: (i: number) => [0x22, ...uleb(i)],
  c64: (v: bigint) => [0x42, ...sleb(BigInt.asIntN(64, v))], c32: (v: number) => [0x41, ...sleb(BigInt(v))],
  load: [0x29, 3, 0], store: [0x37, 3, 0], call: (f: number) => [0x10, ...uleb(f)],
  add: [0x7c], sub: [0x7d], mul: [0x7e], and: [0x83], or: [0x84], shl: [0x86], shrU: [0x88],
  ltU: [0x54], geU: [0x5a], select: [0x1b],
  add32: [0x6a], sub32: [0x6b], mul32: [0x6c], ltU32: [0x49], leU32: [0x4d], shl32: [0x74], shrU32: [0x76],
  block: [0x02, 0x40], loop: [0x03, 0x40], if: [0x04, 0x40], end: [0x0b], br: (d: number) => [0x0c, d],
  brIf: (d: number) => [0x0d, d], eqz32: [0x45],
};

const M32 = 0xffffffffn;

/** add(a, b) = locals 0, 1; local 2 scratch. */
function addBody(): number[] {
  return [
    ...op.get(0), ...op.get(1), ...op.add, ...op.set(2),
    ...op.get(2), ...op.c64(M32), ...op.add, ...op.get(2), ...op.get(2), ...op.get(0), ...op.ltU, ...op.select,
    ...op.set(2),
    ...op.get(2), ...op.c64(P), ...op.sub, ...op.get(2), ...op.get(2), ...op.c64(P), ...op.geU, ...op.select,
  ];
}

/** sub(a, b). */
function subBody(): number[] {
  return [
    ...op.get(0), ...op.get(1), ...op.sub, ...op.tee(2), ...op.c64(M32), ...op.sub,
    ...op.get(2), ...op.get(0), ...op.get(1), ...op.ltU, ...op.select,
  ];
}

/** mul(a, b): locals 2.. al ah bl bh ll lh hl mid lo hi r. */
function mulBody(): number[] {
  const [al, ah, bl, bh, ll, lh, hl, mid, lo, hi, r, hh] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
  const split = (src: number, l: number, h: number) => [
    ...op.get(src), ...op.c64(M32), ...op.and, ...op.set(l), ...op.get(src), ...op.c64(32n), ...op.shrU, ...op.set(h)];
  const prod = (x: number, y: number, dst: number) => [...op.get(x), ...op.get(y), ...op.mul, ...op.set(dst)];
  return [
    ...split(0, al, ah), ...split(1, bl, bh),
    ...prod(al, bl, ll), ...prod(al, bh, lh), ...prod(ah, bl, hl), ...prod(ah, bh, hh),
    // mid = (ll >> 32) + (lh & M) + (hl & M)
    ...op.get(ll), ...op.c64(32n), ...op.shrU, ...op.get(lh), ...op.c64(M32), ...op.and, ...op.add,
    ...op.get(hl), ...op.c64(M32), ...op.and, ...op.add, ...op.set(mid),
    // lo = (ll & M) | (mid << 32)
    ...op.get(ll), ...op.c64(M32), ...op.and, ...op.get(mid), ...op.c64(32n), ...op.shl, ...op.or, ...op.set(lo),
    // hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32)
    ...op.get(hh), ...op.get(lh), ...op.c64(32n), ...op.shrU, ...op.add, ...op.get(hl), ...op.c64(32n), ...op.shrU,
    ...op.add, ...op.get(mid), ...op.c64(32n), ...op.shrU, ...op.add, ...op.set(hi),
    // r = lo + (hi & M) * (2^32 - 1), +(2^32 - 1) on carry
    ...op.get(lo), ...op.get(hi), ...op.c64(M32), ...op.and, ...op.c64(M32), ...op.mul, ...op.add, ...op.set(r),
    ...op.get(r), ...op.c64(M32), ...op.add, ...op.get(r), ...op.get(r), ...op.get(lo), ...op.ltU, ...op.select, ...op.set(r),
    // r -= hi >> 32, -(2^32 - 1) on borrow
    ...op.get(r), ...op.get(hi), ...op.c64(32n), ...op.shrU, ...op.sub, ...op.tee(lo),
    ...op.c64(M32), ...op.sub, ...op.get(lo), ...op.get(r), ...op.get(hi), ...op.c64(32n), ...op.shrU, ...op.ltU,
    ...op.select, ...op.set(r),
    // canonical
    ...op.get(r), ...op.c64(P), ...op.sub, ...op.get(r), ...op.get(r), ...op.c64(P), ...op.geU, ...op.select,
  ];
}

const F_ADD = 0, F_SUB = 1, F_MUL = 2;

/** wr(x0, x1, n, out, pairs, np, consts, hasMid): locals 8.. t k x u acc total mid. */
function wrBody(): number[] {
  const [x0, x1, n, out, pairs, np, consts, hasMid] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [t, k, x, u, acc, total, mid] = [8, 9, 10, 11, 12, 13, 14];
  const at = (base: number, idx: number) => [...op.get(base), ...op.get(idx), ...op.c32(3), ...op.shl32, ...op.add32];
  return [
    ...op.get(consts), ...op.load, ...op.set(total),
    ...op.get(consts), ...op.c32(8), ...op.add32, ...op.load, ...op.set(mid),
    ...op.c32(0), ...op.set(t),
    ...op.block, ...op.loop,
    ...op.get(t), ...op.get(n), ...op.ltU32, ...op.eqz32, ...op.brIf(1),
    ...at(x1, t), ...op.load, ...op.set(x),
    ...op.get(x), ...op.get(x), ...op.call(F_MUL), ...op.get(total), ...op.get(x), ...op.call(F_MUL),
    ...op.call(F_SUB), ...op.set(u),
    ...at(x0, t), ...op.load, ...op.set(acc),
    ...op.get(hasMid), ...op.if,
    ...op.get(acc), ...op.get(x), ...op.get(mid), ...op.call(F_SUB), ...op.call(F_MUL), ...op.set(acc),
    ...op.end,
    ...op.c32(0), ...op.set(k),
    ...op.block, ...op.loop,
    ...op.get(k), ...op.get(np), ...op.ltU32, ...op.eqz32, ...op.brIf(1),
    ...op.get(acc), ...op.get(u), ...at(pairs, k), ...op.load, ...op.call(F_ADD), ...op.call(F_MUL), ...op.set(acc),
    ...op.get(k), ...op.c32(1), ...op.add32, ...op.set(k), ...op.br(0),
    ...op.end, ...op.end,
    ...at(out, t), ...at(out, t), ...op.load, ...op.get(acc), ...op.call(F_ADD), ...op.store,
    ...op.get(t), ...op.c32(1), ...op.add32, ...op.set(t), ...op.br(0),
    ...op.end, ...op.end,
  ];
}

/** bf(a, n, first, tw): the radix-2 levels m = first, 2 first, ..., n on a (bit-reversed
 * order), tw the twiddles w_m^j at m/2 - 1 + j (ntt.ts); locals 4.. m half start j iu iw u v. */
function bfBody(): number[] {
  const [a, n, first, tw] = [0, 1, 2, 3];
  const [m, half, start, j, iu, iw, u, v] = [4, 5, 6, 7, 8, 9, 10, 11];
  const loopWhile = (cond: number[], body: number[]) => [
    ...op.block, ...op.loop, ...cond, ...op.eqz32, ...op.brIf(1), ...body, ...op.br(0), ...op.end, ...op.end];
  const addr = (base: number, idx: number[]) => [...op.get(base), ...idx, ...op.c32(3), ...op.shl32, ...op.add32];
  const inner = [
    ...addr(a, [...op.get(start), ...op.get(j), ...op.add32]), ...op.set(iu),
    ...op.get(iu), ...op.get(half), ...op.c32(3), ...op.shl32, ...op.add32, ...op.set(iw),
    ...op.get(iu), ...op.load, ...op.set(u),
    ...op.get(iw), ...op.load,
    ...addr(tw, [...op.get(half), ...op.c32(1), ...op.sub32, ...op.get(j), ...op.add32]), ...op.load,
    ...op.call(F_MUL), ...op.set(v),
    ...op.get(iu), ...op.get(u), ...op.get(v), ...op.call(F_ADD), ...op.store,
    ...op.get(iw), ...op.get(u), ...op.get(v), ...op.call(F_SUB), ...op.store,
    ...op.get(j), ...op.c32(1), ...op.add32, ...op.set(j),
  ];
  const blocks = [
    ...op.c32(0), ...op.set(j),
    ...loopWhile([...op.get(j), ...op.get(half), ...op.ltU32], inner),
    ...op.get(start), ...op.get(m), ...op.add32, ...op.set(start),
  ];
  const levels = [
    ...op.get(m), ...op.c32(1), ...op.shrU32, ...op.set(half), // half = m >> 1 (shr_u)
    ...op.c32(0), ...op.set(start),
    ...loopWhile([...op.get(start), ...op.get(n), ...op.ltU32], blocks),
    ...op.get(m), ...op.c32(1), ...op.shl32, ...op.set(m),
  ];
  return [
    ...op.get(first), ...op.set(m),
    ...loopWhile([...op.get(m), ...op.get(n), ...op.leU32], levels), // m <= n (le_u)
  ];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function func(locals: [number, number][], body: number[]): number[] {
  const b = [...vec(locals.map(([count, type]) => [...uleb(count), type])), ...body, 0x0b];
  return [...uleb(b.length), ...b];
}

const name = (s: string) => [...uleb(s.length), ...new TextEncoder().encode(s)];

/** The module's bytes. */
export function moduleBytes(): Uint8Array<ArrayBuffer> {
  const types = vec([
    [0x60, ...vec([[I64], [I64]]), ...vec([[I64]])], // (i64, i64) -> i64
    [0x60, ...vec(Array(8).fill([I32])), 0x00], // wr
    [0x60, ...vec(Array(4).fill([I32])), 0x00], // bf
  ]);
  const funcs = vec([[0], [0], [0], [1], [2]]);
  const memory = vec([[0x00, ...uleb(2)]]);
  const exports = vec([[...name("mem"), 0x02, 0], [...name("wr"), 0x00, 3], [...name("bf"), 0x00, 4]]);
  const code = vec([
    func([[1, I64]], addBody()), func([[1, I64]], subBody()), func([[12, I64]], mulBody()),
    func([[2, I32], [5, I64]], wrBody()), func([[6, I32], [2, I64]], bfBody()),
  ]);
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, types), ...section(3, funcs), ...section(5, memory), ...section(7, exports),
    ...section(10, code)]);
}

export interface Kernel {
  readonly memory: WebAssembly.Memory;
  wr(x0: number, x1: number, n: number, out: number, pairs: number, np: number, consts: number,
     hasMid: number): void;
  bf(a: number, n: number, first: number, tw: number): void;
}

let kernel: Kernel | null | undefined;

/** The compiled kernel, or null where WebAssembly cannot run here (the JS path is used). */
export function wasmKernel(): Kernel | null {
  if (kernel === undefined) {
    try {
      const instance = new WebAssembly.Instance(new WebAssembly.Module(moduleBytes()), {});
      const ex = instance.exports as unknown as { mem: WebAssembly.Memory; wr: Kernel["wr"]; bf: Kernel["bf"] };
      kernel = { memory: ex.mem, wr: ex.wr, bf: ex.bf };
    } catch {
      kernel = null;
    }
  }
  return kernel;
}

/** Force the JavaScript path (tests compare both). */
export function setWasmEnabled(enabled: boolean): void {
  kernel = enabled ? undefined : null;
}
