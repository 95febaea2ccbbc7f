// emulation-packed.wgsl: where the emulated fragments of ./emulation.wgsl read their bytes, for the
// direct-rhs form of the subgroup-matrix kernel (./sgmat-rhs-direct.wgsl; GEMM stage of
// pack -> gemm -> output): word `index` of the packed rhs `rhsWords` for a fragment loaded from it
// (emuLoadPacked), else of `stage`. ./emulation.ts composes it after emulation.wgsl in place of
// ./emulation-stage.wgsl when the kernel text loads from rhsWords.

fn emuWord(packed: u32, index: u32) -> u32 {
  if (packed != 0u) {
    return rhsWords[index];
  }
  return bitcast<u32>(stage[index]);
}
