// Test fixtures for code that plans or chooses by adapter capabilities without a GPU (the registry, the
// planner, the pack formats, split-K): a plain adapter with dot4 and the WebGPU default-ish limits, and a
// GEMM shape, each overridable.

import type { AdapterCaps, PlanLimits } from '../../src/gpu/caps.ts';
import type { Order } from '../../src/types.ts';

export const testLimits = (over: Partial<PlanLimits> = {}): PlanLimits => ({
  maxStorageBufferBindingSize: 2 ** 30,
  maxComputeWorkgroupsPerDimension: 65535,
  maxBufferSize: 2 ** 32,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  minStorageBufferOffsetAlignment: 256,
  minUniformBufferOffsetAlignment: 256,
  ...over,
});

export const testCaps = (over: Partial<AdapterCaps> = {}): AdapterCaps => ({
  vendor: 'test',
  architecture: 'test',
  isSoftware: false,
  slowCompiler: false,
  dot4: true,
  subgroups: false,
  subgroupMinSize: 0,
  subgroupMaxSize: 0,
  subgroupMatrix: [],
  f16: false,
  timestamps: false,
  limits: testLimits(),
  ...over,
});

/** An int32-output GEMM shape. */
export const testShape = (M: number, N: number, K: number, dstOrder: Order = 'row-major') => ({
  M,
  N,
  K,
  dstType: 'int32' as const,
  dstOrder,
});

/** An NVIDIA H100 as Dawn reports it (u8 16x16x32 subgroup matrices, subgroups of 32, 48 KiB of workgroup memory). */
export const h100Caps = (over: Partial<AdapterCaps> = {}): AdapterCaps =>
  testCaps({
    vendor: 'nvidia',
    architecture: 'hopper',
    subgroups: true,
    subgroupMinSize: 32,
    subgroupMaxSize: 32,
    subgroupMatrix: [{ componentType: 'u8', resultComponentType: 'u32', M: 16, N: 16, K: 32 }],
    f16: true,
    timestamps: true,
    limits: testLimits({
      maxStorageBufferBindingSize: 2 ** 31,
      maxComputeWorkgroupStorageSize: 49152,
      maxComputeInvocationsPerWorkgroup: 1024,
      maxComputeWorkgroupSizeX: 1024,
    }),
    ...over,
  });
