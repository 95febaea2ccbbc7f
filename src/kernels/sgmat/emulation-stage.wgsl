// emulation-stage.wgsl: where the emulated fragments of ./emulation.wgsl read their bytes, for kernels
// that load every fragment from the workgroup staging (GEMM stage of pack -> gemm -> output): word
// `index` of `stage`. ./emulation.ts composes it after emulation.wgsl, or ./emulation-packed.wgsl where
// the kernel also loads from the packed rhs.

fn emuWord(packed: u32, index: u32) -> u32 {
  return bitcast<u32>(stage[index]);
}
