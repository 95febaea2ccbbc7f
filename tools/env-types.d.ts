// The WebGPU and WebAssembly types of the published declarations, taken from the consumer's
// environment. `npm run build`'s declaration step (tools/build-types.mjs) copies this file to
// dist/types/env-types.d.ts and makes every declaration that names a GPU* or WebAssembly.* type import
// it from here, so the package declares no WebGPU global of its own and references no @webgpu/types.
// Where the program has WebGPU types (TypeScript 7's DOM library, or @webgpu/types that
// the program installs itself), each alias below is that type; where it has none (TypeScript 5.x's DOM
// library, or no DOM library at all), it is `unknown`, so a device or buffer passes in and comes out
// opaque. A second copy of the WebGPU types is what made TypeScript 7 with "lib": ["dom"] report
// duplicate identifiers.

/** The global scope of the consuming program: the classes WebGPU declares there, if any. */
type Env = typeof globalThis;

export type GPU = Env extends { GPU: { prototype: infer T } } ? T : unknown;
export type GPUAdapter = Env extends { GPUAdapter: { prototype: infer T } } ? T : unknown;
export type GPUAdapterInfo = Env extends { GPUAdapterInfo: { prototype: infer T } } ? T : unknown;
export type GPUDevice = Env extends { GPUDevice: { prototype: infer T } } ? T : unknown;
export type GPUQueue = Env extends { GPUQueue: { prototype: infer T } } ? T : unknown;
export type GPUBuffer = Env extends { GPUBuffer: { prototype: infer T } } ? T : unknown;
export type GPUQuerySet = Env extends { GPUQuerySet: { prototype: infer T } } ? T : unknown;
export type GPUCommandEncoder = Env extends { GPUCommandEncoder: { prototype: infer T } } ? T : unknown;
export type GPUComputePassEncoder = Env extends { GPUComputePassEncoder: { prototype: infer T } } ? T : unknown;
export type GPUComputePipeline = Env extends { GPUComputePipeline: { prototype: infer T } } ? T : unknown;

/** The dictionaries have no class of their own: they are read off GPUDevice.createBindGroup's parameter. */
type BindGroupDescriptor = GPUDevice extends { createBindGroup(descriptor: infer D): unknown } ? D : unknown;
export type GPUBindGroupEntry = BindGroupDescriptor extends { entries: Iterable<infer E> } ? E : unknown;
export type GPUBindingResource = GPUBindGroupEntry extends { resource: infer R } ? R : unknown;
export type GPUBufferBinding = [Extract<GPUBindingResource, { buffer: unknown }>] extends [never]
  ? unknown
  : Extract<GPUBindingResource, { buffer: unknown }>;

/** The same two strings in every version of the WebGPU specification. */
export type GPUPowerPreference = 'low-power' | 'high-performance';

/** WebAssembly is declared by the DOM and worker libraries, not by ES2022. */
export type WebAssemblyModule = Env extends { WebAssembly: { Module: { prototype: infer T } } } ? T : unknown;
export type WebAssemblyMemory = Env extends { WebAssembly: { Memory: { prototype: infer T } } } ? T : unknown;
