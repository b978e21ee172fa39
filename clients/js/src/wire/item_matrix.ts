/**
 * The item-matrix broadcast (Python: dprec.protocol.messages.ItemMatrix, kind 3, and
 * ItemMatrix64, kind 10): epoch i64, n_items u32 (<= MAX_ITEMS), n_factors u32, then the
 * n x f matrix row-major, float32 (kind 3, what a device takes) or float64 (kind 10, the
 * server's V bit for bit: FMF-LDP's cells=assigned hashes it). Every entry must be finite.
 */
import { MessageError } from "../errors.js";
import { HEADER_BYTES, I64_MAX, I64_MIN, Kind, MAX_ITEMS, U32_MAX, Writer, readHeader } from "./header.js";
import { bigintField, checkFinite, integerField, realArray } from "./fields.js";

/** An item matrix: `rows x cols` values, row-major. */
export interface ItemMatrix<T extends Float32Array | Float64Array = Float32Array | Float64Array> {
  readonly epoch: bigint;
  readonly rows: number;
  readonly cols: number;
  readonly matrix: T;
}

/** What an encoder accepts. */
export interface ItemMatrixInput {
  epoch?: bigint | number;
  rows: number;
  cols: number;
  matrix: ArrayLike<number>;
}

function width(kind: Kind): number {
  return kind === Kind.ItemMatrix64 ? 8 : 4;
}

/** Bytes of a broadcast of an `rows x cols` matrix of `kind` (ItemMatrix or ItemMatrix64). */
export function itemMatrixSize(kind: typeof Kind.ItemMatrix | typeof Kind.ItemMatrix64,
                               rows: number, cols: number): number {
  return HEADER_BYTES + 16 + width(kind) * rows * cols;
}

function encode(kind: typeof Kind.ItemMatrix | typeof Kind.ItemMatrix64, m: ItemMatrixInput):
    Uint8Array {
  const rows = integerField("n_items (matrix rows)", m.rows, 0, MAX_ITEMS);
  const cols = integerField("n_factors (matrix columns)", m.cols, 0, U32_MAX);
  const epoch = bigintField("epoch", m.epoch ?? 0n, I64_MIN, I64_MAX);
  const values = kind === Kind.ItemMatrix64
    ? realArray("matrix", m.matrix, Float64Array)
    : realArray("matrix", m.matrix, Float32Array);
  if (values.length !== rows * cols) {
    throw new MessageError(`matrix must hold ${rows} x ${cols} values, got ${values.length}`);
  }
  const w = new Writer(kind, itemMatrixSize(kind, rows, cols) - HEADER_BYTES);
  w.i64(epoch);
  w.u32(rows);
  w.u32(cols);
  if (kind === Kind.ItemMatrix64) for (const v of values) w.f64(v);
  else for (const v of values) w.f32(v);
  return w.done();
}

function decode(kind: typeof Kind.ItemMatrix | typeof Kind.ItemMatrix64, data: Uint8Array):
    ItemMatrix {
  const r = readHeader(data, kind);
  const epoch = r.i64("epoch");
  const rows = r.u32("n_items");
  const cols = r.u32("n_factors");
  if (rows > MAX_ITEMS) throw new MessageError(`n_items must be in [0, ${MAX_ITEMS}], got ${rows}`);
  r.expectRemaining(width(kind) * rows * cols, `a ${rows} x ${cols} matrix`);
  const matrix = kind === Kind.ItemMatrix64
    ? r.f64Array(rows * cols, "matrix") : r.f32Array(rows * cols, "matrix");
  checkFinite("matrix", matrix);
  r.finish();
  return { epoch, rows, cols, matrix };
}

export function encodeItemMatrix(m: ItemMatrixInput): Uint8Array {
  return encode(Kind.ItemMatrix, m);
}

export function decodeItemMatrix(data: Uint8Array): ItemMatrix<Float32Array> {
  return decode(Kind.ItemMatrix, data) as ItemMatrix<Float32Array>;
}

export function encodeItemMatrix64(m: ItemMatrixInput): Uint8Array {
  return encode(Kind.ItemMatrix64, m);
}

export function decodeItemMatrix64(data: Uint8Array): ItemMatrix<Float64Array> {
  return decode(Kind.ItemMatrix64, data) as ItemMatrix<Float64Array>;
}

/** Refuse unless the matrix is `rows x cols` (Python: ItemMatrix.check_for). */
export function checkItemMatrixFor<M extends ItemMatrix>(m: M, rows: number, cols: number): M {
  if (m.rows !== rows || m.cols !== cols) {
    throw new MessageError(`item matrix must be (${rows}, ${cols}), got (${m.rows}, ${m.cols})`);
  }
  return m;
}
