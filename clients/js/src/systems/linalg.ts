/** Small dense linear algebra for the device (F x F systems, F <= 255). */
import { DprecError } from "../errors.js";

/** Solve A x = b for a symmetric positive definite A (f x f, row-major) by Cholesky;
 * A and b are not modified. A {@link DprecError} if A is not positive definite. */
export function choleskySolve(A: Float64Array, b: Float64Array, f: number): Float64Array {
  const L = new Float64Array(f * f);
  for (let i = 0; i < f; i++) {
    for (let j = 0; j <= i; j++) {
      let s = A[i * f + j]!;
      for (let m = 0; m < j; m++) s -= L[i * f + m]! * L[j * f + m]!;
      if (i === j) {
        if (!(s > 0)) {
          throw new DprecError("the least-squares system is not positive definite; increase " +
            "the regularization");
        }
        L[i * f + i] = Math.sqrt(s);
      } else {
        L[i * f + j] = s / L[j * f + j]!;
      }
    }
  }
  const y = new Float64Array(f);
  for (let i = 0; i < f; i++) {
    let s = b[i]!;
    for (let m = 0; m < i; m++) s -= L[i * f + m]! * y[m]!;
    y[i] = s / L[i * f + i]!;
  }
  const x = new Float64Array(f);
  for (let i = f - 1; i >= 0; i--) {
    let s = y[i]!;
    for (let m = i + 1; m < f; m++) s -= L[m * f + i]! * x[m]!;
    x[i] = s / L[i * f + i]!;
  }
  return x;
}
