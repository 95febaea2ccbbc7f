// WebGPU's buffer usage and map mode bits, as the spec numbers them (the same in every implementation),
// for every buffer the library creates, maps or checks (pack -> gemm -> output alike). The library reads
// no GPUBufferUsage or GPUMapMode global: a Node process that brought its own GPUDevice from the
// `webgpu` package need not have installed them (./dawn.ts installs them only where it loads Dawn itself).

/** GPUBufferUsage's bits. */
export const BufferUsage = {
  MAP_READ: 0x0001,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
  QUERY_RESOLVE: 0x0200,
} as const;

/** GPUMapMode's bits. */
export const MapMode = { READ: 0x0001 } as const;
