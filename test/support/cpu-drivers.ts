// Which WebAssembly driver (wasmRunStats.lastDriver, src/kernels/cpu-wasm/run.ts) a GEMM over a
// prepacked 8-bit rhs must run, from the engine's capabilities, never from the kind of machine the tests
// happen to run on. prepackCpu packs for the relaxed kernel where the engine proved its relaxed dot exact
// (an Intel CPU with VNNI, ARM's sdot; Node 22+ and Chrome), else for the 16-bit kernel (AMD Zen 4,
// where V8 lowers the dot to the saturating pmaddubsw; Node 20). Each test that asserts a driver either
// forces the mode it means (configureWasm({ relaxedSimd: false }) for the byte lanes) or asks these.
// test/unit/cpu-drivers.test.ts holds both outcomes to literal tables, so that a machine of either kind
// would catch a wrong expectation.

/** The engine's relaxed-SIMD outcome, as wasmCpuCaps() reports it. */
export interface EngineKind {
  relaxedSimd: boolean;
}

/** The relaxed few-row kernel's shape at M rows (gen-relaxed-few.ts), or null where the 6x8 serves. */
export function relaxedFewShape(M: number): '1x4' | '2x2' | '4x1' | null {
  if (M === 1) return '1x4';
  if (M === 2) return '2x2';
  return M <= 4 || [7, 8, 13, 14, 15, 16].includes(M) ? '4x1' : null;
}

/** The 16-bit kernel's drivers over a prepacked rhs: byte lanes to 2 rows, widened 3-row tiles, else the panels. */
function i16Driver(M: number, lhsZeroPoint: number): RegExp {
  if (Math.abs(lhsZeroPoint) > 32512) return /^gemm_i16$/; // lhs - zL leaves 16 bits: the panels
  if (M <= 2) return /^gemm_lane_/;
  return [3, 5, 6, 9].includes(M) ? /^gemm_wide_/ : /^gemm_i16$/;
}

/** The driver of an 8-bit GEMM of M rows over a prepacked rhs, on an engine of this kind. */
export function prepackedDriver(engine: EngineKind, M: number, lhsZeroPoint: number): RegExp {
  if (!engine.relaxedSimd) return i16Driver(M, lhsZeroPoint);
  const shape = relaxedFewShape(M);
  return shape ? new RegExp(`^gemm_relaxed_${shape}$`) : /^gemm_relaxed$/;
}

/**
 * What `qgemm verify`'s prepacked row must name among its drivers (the suite has 1 to 9 rows): the few-row
 * kernels of the kernel prepackCpu packed for.
 */
export function verifyPrepackedDrivers(engine: EngineKind): RegExp[] {
  return engine.relaxedSimd ? [/gemm_relaxed_1x4/, /gemm_relaxed_2x2/, /gemm_relaxed_4x1/] : [/gemm_lane_1x4/, /gemm_wide_3x4/];
}
