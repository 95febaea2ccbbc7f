// Types of ./attempts.mjs (the Chrome-on-a-GPU-server attempts and their pure logic), for the TypeScript
// that imports it: tools/chromium.ts (the hardware profile's flags) and test/unit/chrome-probe.test.ts.

export interface Attempt {
  id: string;
  title: string;
  flags: string[];
  headless: boolean;
  sandbox: boolean;
  icdEnv: boolean;
  copyIcd: boolean;
  xvfb: boolean;
  eglVendor: boolean;
  featureLevel: 'core' | 'compatibility';
}

/** What the probe's page reads from requestAdapter(). */
export interface ProbeAdapter {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  isFallbackAdapter: boolean;
  featureLevel?: string;
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
  features: string[];
  subgroupMatrixConfigs?: string[];
  wgslLanguageFeatures?: string[];
  limits?: Record<string, number>;
}

/** One attempt's record, as tools/chrome-gpu-probe.mjs writes it to chrome-gpu-probe.json. */
export interface AttemptRecord {
  id: string;
  title?: string;
  args?: string[];
  env?: Record<string, string>;
  notes?: string[];
  product?: string;
  adapter: ProbeAdapter | null;
  adapterError?: string;
  gpuLines?: string[];
  gpuText?: string;
  stderrLines?: string[];
  stderrTail?: string;
  error?: string;
  seconds?: number;
}

/** What a launch plan needs to know of the machine (launchPlan). */
export interface LaunchMachine {
  uid?: number;
  icd?: string;
  eglVendor?: string;
  icdDir?: string;
  home?: string;
}

/** launchPlan's answer: what launching Chrome with an attempt takes beside its flags. */
export interface LaunchPlan {
  args: string[];
  headless: boolean;
  unsetEnv: string[];
  env: Record<string, string>;
  copyIcd: { from: string; dir: string } | null;
  runAs: number | null;
  adapterOptions: { featureLevel?: 'compatibility' };
}

export const SANDBOX_UID: number;
export const COPIED_ICD_NAME: string;
export function launchPlan(attempt: Attempt, machine: LaunchMachine): LaunchPlan;
export function runAsCommand(uid: number, command: string): string[];

export const PROBE_COMMON_FLAGS: string[];
export const HARDWARE_FLAGS: string[];
export const NVIDIA_ICD: string;
export const NVIDIA_EGL_VENDOR: string;
export const STANDARD_ICD_DIR: string;
export const ATTEMPTS: Attempt[];
export const STDERR_PATTERN: RegExp;

export function attemptById(id: string): Attempt | undefined;
export function attemptArgs(attempt: Attempt): string[];
export function gpuPageLines(text: string): string[];
export function stderrLines(text: string, max?: number): string[];
export function isHardwareAdapter(adapter: ProbeAdapter | null | undefined, accept?: string[]): boolean;
export function webgpuStatus(gpuLines: string[] | undefined): string;
export function describeAdapter(adapter: ProbeAdapter | null | undefined): string;
export function attemptReason(record: AttemptRecord, accept?: string[]): string;
export function runAttempts(
  attempts: Attempt[],
  run: (attempt: Attempt) => Promise<AttemptRecord>,
  accept?: string[],
): Promise<AttemptRecord[]>;
export function attemptTable(records: AttemptRecord[], accept?: string[]): string;
