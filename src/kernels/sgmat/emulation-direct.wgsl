// emulation-direct.wgsl: where the emulated fragments of ./emulation.wgsl read their bytes, for the '-dd'
// form of the subgroup-matrix kernel (./sgmat-lhs-direct.wgsl and ./sgmat-rhs-direct.wgsl; GEMM stage of
// pack -> gemm -> output): word `index` of the packed lhs `lhsWords` (emuLoadLhs), of the packed rhs
// `rhsWords` (emuLoadPacked), else of `stage`. ./emulation.ts composes it after emulation.wgsl in place of
// ./emulation-stage.wgsl when the kernel text loads from lhsWords.

fn emuWord(packed: u32, index: u32) -> u32 {
  if (packed == 2u) {
    return lhsWords[index];
  }
  if (packed == 1u) {
    return rhsWords[index];
  }
  return bitcast<u32>(stage[index]);
}
