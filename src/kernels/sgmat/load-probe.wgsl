// load-probe.wgsl: a module that compiles only where the WGSL compiler takes the current form of the
// subgroup-matrix loads and stores (./load-form.ts), composed after the kernel's directives and generated
// constants (the fragment aliases of the adapter's configuration). Never dispatched: its compilation
// messages are the answer.

@group(0) @binding(0) var<storage, read_write> probe: array<StageWord>;

@compute @workgroup_size(SUBGROUP_SIZE)
fn loadFormProbe() {
  let a = subgroupMatrixLoad<LeftFragment, row_major>(&probe, 0u, FRAG_K / 4u);
  let b = subgroupMatrixLoad<RightFragment, col_major>(&probe, 0u, FRAG_K / 4u);
  subgroupMatrixStore<row_major>(&probe, 0u, subgroupMatrixMultiplyAccumulate(a, b, ResultFragment()), FRAG_N);
}
