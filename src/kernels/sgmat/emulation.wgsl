// emulation.wgsl: plain-WGSL stand-ins for the subgroup-matrix builtins, for the emulated variant of the
// subgroup-matrix kernel (./emulation.ts rewrites ./sgmat.wgsl to call these; GEMM stage of
// pack -> gemm -> output). A virtual subgroup is SUBGROUP_SIZE consecutive invocations, emuLane an
// invocation's index in it. A left or right fragment is recorded as (byte offset, column-major, stride)
// into the workgroup array `stage` (or, `packed`, into the packed rhs `rhsWords` of the direct-rhs form,
// ./sgmat-rhs-direct.wgsl, or the packed lhs `lhsWords` of the '-dd' form, ./sgmat-lhs-direct.wgsl), and
// its bytes are read when it is multiplied, through emuWord (composed after this file:
// ./emulation-stage.wgsl, ./emulation-packed.wgsl where the kernel loads from rhsWords, or
// ./emulation-direct.wgsl where it loads from lhsWords too); a result fragment holds FRAG_M x FRAG_N sums
// spread over the lanes, EMU_PER_LANE consecutive row-major elements per lane.
// Offsets and strides are the builtins' (current form, ./load-form.ts): elements of the array, i.e. u32
// words, for 8-bit fragments and 32-bit results alike; an operand records them in bytes. Sums wrap
// modulo 2^32, as int32 and uint32 results do.

const EMU_PER_LANE: u32 = FRAG_M * FRAG_N / SUBGROUP_SIZE;

struct EmuOperand {
  offset: u32,
  colMajor: u32,
  stride: u32,
  packed: u32, // 2: bytes of lhsWords, 1: bytes of rhsWords (direct loads), 0: bytes of stage
}

struct EmuResult {
  v: array<u32, EMU_PER_LANE>,
}

var<private> emuLane: u32;

/** A load from `stage`: offset and stride in words. */
fn emuLoad(colMajor: bool, offset: u32, stride: u32) -> EmuOperand {
  return EmuOperand(offset * 4u, select(0u, 1u, colMajor), stride * 4u, 0u);
}

/** A load from the packed rhs (storage): offset and stride in words, as for `stage`. */
fn emuLoadPacked(colMajor: bool, offset: u32, stride: u32) -> EmuOperand {
  return EmuOperand(offset * 4u, select(0u, 1u, colMajor), stride * 4u, 1u);
}

/** A load from the packed lhs (storage, the '-dd' form): offset and stride in words, as for `stage`. */
fn emuLoadLhs(colMajor: bool, offset: u32, stride: u32) -> EmuOperand {
  return EmuOperand(offset * 4u, select(0u, 1u, colMajor), stride * 4u, 2u);
}

/** Byte `offset` of an operand's memory as the fragment's component: u8, or i8 sign-extended (as a wrapped u32). */
fn emuByte(packed: u32, offset: u32) -> u32 {
  let b = (emuWord(packed, offset / 4u) >> ((offset % 4u) * 8u)) & 0xffu;
  return select(b, b | 0xffffff00u, SIGNED_FRAGMENTS && b >= 128u);
}

/** Element (row, col) of an operand: left FRAG_M x FRAG_K, right FRAG_K x FRAG_N. */
fn emuElement(x: EmuOperand, row: u32, col: u32) -> u32 {
  return emuByte(x.packed, select(x.offset + row * x.stride + col, x.offset + col * x.stride + row, x.colMajor != 0u));
}

fn emuMultiplyAccumulate(a: EmuOperand, b: EmuOperand, c: EmuResult) -> EmuResult {
  var r = c;
  for (var j = 0u; j < EMU_PER_LANE; j++) {
    let e = emuLane * EMU_PER_LANE + j;
    let row = e / FRAG_N;
    let col = e % FRAG_N;
    var s = r.v[j];
    for (var k = 0u; k < FRAG_K; k++) {
      s += emuElement(a, row, k) * emuElement(b, k, col);
    }
    r.v[j] = s;
  }
  return r;
}

fn emuStore(colMajor: bool, offset: u32, c: EmuResult, stride: u32) {
  for (var j = 0u; j < EMU_PER_LANE; j++) {
    let e = emuLane * EMU_PER_LANE + j;
    let row = e / FRAG_N;
    let col = e % FRAG_N;
    stage[offset + select(row * stride + col, col * stride + row, colMajor)] = bitcast<StageWord>(c.v[j]);
  }
}
