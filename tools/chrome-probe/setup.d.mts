// Types of ./setup.mjs (carrying out a Chrome attempt's launch plan), for tools/chromium.ts.

import type { LaunchPlan } from './attempts.mjs';

export interface PreparedLaunch {
  env: Record<string, string | undefined>;
  notes: string[];
  cleanup(): void;
}

export function libraryPath(prefix: string, inherited?: string): string;
export function installIcd(icd: string, dir: string): () => void;
export function startXvfb(
  prefix: string,
  env: Record<string, string | undefined>,
): Promise<{ display: string; stop(): void; notes: string[] }>;
export function prepareLaunch(
  plan: LaunchPlan,
  opts?: { env?: Record<string, string | undefined>; prefix?: string; profile?: string },
): Promise<PreparedLaunch>;
export function runAsWrapper(uid: number, command: string, dir: string): string;
