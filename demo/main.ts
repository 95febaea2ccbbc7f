// The demo page's logic (demo/index.html; built by `vite build --mode demo` into dist/demo). It imports
// the library from src/ (vite bundles it, shaders included), makes one GpuContext on the browser's
// WebGPU adapter, and for each Run: draws random operands of the chosen shape and types, builds the
// chosen output pipeline (parameters calibrated from the operands' statistics so the 8-bit outputs use
// their range), times the GEMM on WebGPU and on the CPU (backend 'cpu': the fastest exact CPU kernel) after a warm-up, compares the two
// results element by element, and plots GOPS per run. Without WebGPU it runs on the CPU only and says so.

import {
  gemm,
  describeAdapter,
  GpuContext,
  INT32_MAX,
  quantizeMultiplier,
  type GemmProblem,
  type GemmResult,
  type GemmTiming,
  type Operand,
  type OperandType,
  type Order,
  type OutputStage,
} from '../src/index.ts';

// ---- DOM ------------------------------------------------------------------------------------------

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>('form');
const runButton = $<HTMLButtonElement>('run');
const statusLine = $('status');
const agreement = $('agreement');
const timingsBody = $('timings-body');
const resultNote = $('result-note');
const chart = $('chart');
const adapterBox = $('adapter');
const pipelineHint = $('pipeline-hint');
const cancelButton = $<HTMLButtonElement>('cancel');
const progress = $<HTMLProgressElement>('progress');
const resultCard = $('result-card');

/** Thrown between timed runs once Cancel is pressed. */
class Cancelled extends Error {}
let cancelRequested = false;

/** Counts finished runs into the progress bar; throws Cancelled when the user asked to stop. */
function step(): void {
  if (cancelRequested) throw new Cancelled('cancelled');
  progress.value += 1;
}

const num = (id: string) => Number($<HTMLInputElement>(id).value);
const sel = (id: string) => $<HTMLSelectElement>(id).value;
const fmt = new Intl.NumberFormat('en-US');

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: (Node | string)[]) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

// ---- the problem ----------------------------------------------------------------------------------

type Preset = 'none' | 'requant-uint8' | 'per-channel-int8' | 'tanh-int8';

const PRESET_HINTS: Record<Preset, string> = {
  none: 'No output stages: the int32 accumulators as they are (int32 wraps, as in C).',
  'requant-uint8': 'scaleInt32ByFixedPointAndExponent (a Q31 multiplier and 2^exponent, plus an offset), then saturatingCast to uint8.',
  'per-channel-int8':
    'bias per output column, scaleInt32ByFixedPointAndExponent with a multiplier and exponent per column, saturatingCast to int8.',
  'tanh-int8': "bias (centering), gemmlowp's fixed-point tanh, scaleInt32ByFixedPointAndExponent to ±127, saturatingCast to int8.",
};

interface Settings {
  M: number;
  N: number;
  K: number;
  lhsType: OperandType;
  rhsType: OperandType;
  lhsOrder: Order;
  rhsOrder: Order;
  lhsZeroPoint: number;
  rhsZeroPoint: number;
  preset: Preset;
  repeats: number;
}

function readSettings(): Settings {
  const dim = (id: string) => {
    const v = num(id);
    if (!Number.isInteger(v) || v < 1 || v > 4096) throw new RangeError(`${id.toUpperCase()} must be an integer in 1..4096`);
    return v;
  };
  const zp = (id: string) => {
    const v = num(id);
    if (!Number.isInteger(v) || Math.abs(v) > INT32_MAX) throw new RangeError(`${id} must be an int32`);
    return v;
  };
  return {
    M: dim('m'),
    N: dim('n'),
    K: dim('k'),
    lhsType: sel('lhs-type') as OperandType,
    rhsType: sel('rhs-type') as OperandType,
    lhsOrder: sel('lhs-order') as Order,
    rhsOrder: sel('rhs-order') as Order,
    lhsZeroPoint: zp('lhs-zp'),
    rhsZeroPoint: zp('rhs-zp'),
    preset: sel('pipeline') as Preset,
    repeats: Math.min(50, Math.max(1, Math.round(num('repeats')) || 1)),
  };
}

function randomOperand(type: OperandType, rows: number, cols: number, order: Order): Operand {
  const data = type === 'int8' ? new Int8Array(rows * cols) : new Uint8Array(rows * cols);
  const bytes = new Uint8Array(data.buffer);
  for (let i = 0; i < bytes.length; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
  return { data, rows, cols, order };
}

/** Mean and standard deviation of one accumulator, for uniform random operands (the calibration). */
function accumulatorStats(s: Settings): { mean: number; sd: number } {
  const VAR = (256 * 256 - 1) / 12; // uniform over 256 values
  const mu = (t: OperandType) => (t === 'uint8' ? 127.5 : -0.5);
  const a = mu(s.lhsType) - s.lhsZeroPoint;
  const b = mu(s.rhsType) - s.rhsZeroPoint;
  const mean = s.K * a * b;
  const sd = Math.sqrt(s.K * ((VAR + a * a) * (VAR + b * b) - a * a * b * b));
  return { mean, sd: Math.max(1, sd) };
}

const clampInt32 = (x: number) => Math.max(-INT32_MAX, Math.min(INT32_MAX, Math.round(x)));

/** multiplyByQuantizedMultiplier parameters for a real scale (TFLite QuantizeMultiplier). */
function fixedPointScale(real: number): { multiplier: number; exponent: number } {
  const q = quantizeMultiplier(real);
  return { multiplier: q.multiplier, exponent: Math.max(-31, Math.min(31, q.shift)) };
}

function buildPipeline(s: Settings): OutputStage[] {
  const { mean, sd } = accumulatorStats(s);
  switch (s.preset) {
    case 'none':
      return [];
    case 'requant-uint8': {
      // Map mean ± 3 sd onto 0..255.
      const lo = mean - 3 * sd;
      const scale = 255 / (6 * sd);
      return [
        {
          type: 'scaleInt32ByFixedPointAndExponent',
          ...fixedPointScale(scale),
          offsetAfterShift: clampInt32(-lo * scale),
          rounding: 'double',
        },
        { type: 'saturatingCast', to: 'uint8' },
      ];
    }
    case 'per-channel-int8': {
      const bias = new Int32Array(s.N);
      const multiplier = new Int32Array(s.N);
      const exponent = new Int32Array(s.N);
      for (let n = 0; n < s.N; n++) {
        bias[n] = clampInt32(-mean + (Math.random() - 0.5) * sd);
        const q = fixedPointScale((127 / (3 * sd)) * (0.5 + Math.random()));
        multiplier[n] = q.multiplier;
        exponent[n] = q.exponent;
      }
      return [
        { type: 'bias', axis: 'col', values: bias },
        { type: 'scaleInt32ByFixedPointAndExponent', multiplier, exponent, offsetAfterShift: 0, rounding: 'double', axis: 'col' },
        { type: 'saturatingCast', to: 'int8' },
      ];
    }
    case 'tanh-int8': {
      const amplitude = Math.min(2 ** 27, Math.max(1, Math.round(sd)));
      return [
        { type: 'bias', axis: 'col', values: new Int32Array(s.N).fill(clampInt32(-mean)) },
        { type: 'tanh', realZeroAsInt32: 0, realAmplitudeAsInt32: amplitude },
        { type: 'scaleInt32ByFixedPointAndExponent', ...fixedPointScale(127 / amplitude), offsetAfterShift: 0, rounding: 'double' },
        { type: 'saturatingCast', to: 'int8' },
      ];
    }
  }
}

// ---- running and timing ---------------------------------------------------------------------------

const nextFrame = () => new Promise<void>((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};

interface Timed {
  result: GemmResult;
  medianMs: number;
  minMs: number;
  maxMs: number;
  gpuMs: number | null;
}

async function timeRuns(label: string, repeats: number, once: (timing: GemmTiming) => Promise<GemmResult>): Promise<Timed> {
  setStatus(`${label}: warm-up…`);
  await nextFrame();
  let result = await once({ gpuMs: null });
  step();
  const times: number[] = [];
  const gpuTimes: number[] = [];
  for (let i = 0; i < repeats; i++) {
    setStatus(`${label}: run ${i + 1} of ${repeats}…`);
    await nextFrame();
    const timing: GemmTiming = { gpuMs: null };
    const t0 = performance.now();
    result = await once(timing);
    times.push(performance.now() - t0);
    step();
    if (timing.gpuMs !== null) gpuTimes.push(timing.gpuMs);
  }
  return {
    result,
    medianMs: median(times),
    minMs: Math.min(...times),
    maxMs: Math.max(...times),
    gpuMs: gpuTimes.length ? median(gpuTimes) : null,
  };
}

/** Element (m, n) of a result, whatever its storage order. */
function at(r: GemmResult, m: number, n: number): number {
  return r.data[r.order === 'row-major' ? m * r.cols + n : n * r.rows + m];
}

function compare(a: GemmResult, b: GemmResult): { equal: number; total: number; first: string | null } {
  const total = a.rows * a.cols;
  if (a.rows !== b.rows || a.cols !== b.cols || a.dtype !== b.dtype) {
    return { equal: 0, total, first: `different results: ${a.rows}×${a.cols} ${a.dtype} vs ${b.rows}×${b.cols} ${b.dtype}` };
  }
  let equal = 0;
  let first: string | null = null;
  for (let m = 0; m < a.rows; m++) {
    for (let n = 0; n < a.cols; n++) {
      const x = at(a, m, n);
      const y = at(b, m, n);
      if (x === y) equal++;
      else first ??= `first difference at (${m}, ${n}): WebGPU ${x}, CPU ${y}`;
    }
  }
  return { equal, total, first };
}

// ---- chart ----------------------------------------------------------------------------------------

interface RunRecord {
  label: string;
  webgpu: number | null;
  cpu: number;
}
const runs: RunRecord[] = [];
const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceMax(x: number): number {
  if (x <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

/** GOPS with about three significant digits (SwiftShader on small shapes gives hundredths). */
const times = (r: number) => `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}×`;
const gopsText = (g: number) =>
  g === 0 ? '0' : g >= 100 ? g.toFixed(0) : g >= 10 ? g.toFixed(1) : g >= 0.1 ? g.toFixed(2) : g.toPrecision(2);

function drawChart(): void {
  chart.replaceChildren();
  if (!runs.length) {
    chart.append(el('p', { class: 'muted small' }, 'Runs will appear here.'));
    return;
  }
  const shown = runs.slice(-10);
  const W = 640;
  const H = 254;
  const left = 62;
  const right = 10;
  const top = 28;
  const bottom = 58;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'GOPS per run, WebGPU and CPU' });
  const plotH = H - top - bottom;
  // A linear axis, or a log axis (decades) when the values span more than 50x (SwiftShader's small
  // shapes against the CPU), so that no bar vanishes.
  const values = shown.flatMap((r) => [r.cpu, r.webgpu ?? 0]).filter((v) => v > 0);
  const hi = Math.max(...values, 1e-9);
  const lo = Math.min(...values, hi);
  const logScale = hi / lo > 50;
  let y: (v: number) => number;
  let ticks: { v: number; text: string }[];
  if (logScale) {
    const d0 = Math.floor(Math.log10(lo));
    const d1 = Math.max(d0 + 1, Math.ceil(Math.log10(hi)));
    y = (v) => top + plotH * (1 - (Math.log10(Math.max(v, 10 ** d0)) - d0) / (d1 - d0));
    ticks = Array.from({ length: d1 - d0 + 1 }, (_, i) => {
      const d = d0 + i;
      return { v: 10 ** d, text: d >= 0 ? String(10 ** d) : (10 ** d).toFixed(-d) };
    });
  } else {
    const max = niceMax(hi);
    const step = max / 5;
    const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    y = (v) => top + plotH * (1 - v / max);
    ticks = Array.from({ length: 6 }, (_, i) => ({ v: step * i, text: (step * i).toFixed(decimals) }));
  }
  const base = y(ticks[0].v);
  for (const t of ticks) {
    root.append(svg('line', { x1: left, x2: W - right, y1: y(t.v), y2: y(t.v), class: 'grid' }));
    root.append(svg('text', { x: left - 6, y: y(t.v) + 4, 'text-anchor': 'end', class: 'tick' }, t.text));
  }
  const mid = top + plotH / 2;
  root.append(
    svg(
      'text',
      { x: 12, y: mid, class: 'axis', transform: `rotate(-90 12 ${mid})`, 'text-anchor': 'middle' },
      logScale ? 'GOPS (log)' : 'GOPS',
    ),
  );
  const slot = (W - left - right) / Math.max(shown.length, 4);
  const bar = Math.min(28, slot * 0.36);
  shown.forEach((r, i) => {
    const cx = left + slot * (i + 0.5);
    const bars: [string, number | null, number][] = [
      ['webgpu', r.webgpu, cx - bar - 1],
      ['cpu', r.cpu, cx + 1],
    ];
    for (const [cls, v, x] of bars) {
      if (v === null) continue;
      const rect = svg('rect', {
        x,
        y: Math.min(y(v), base - 1),
        width: bar,
        height: Math.max(1, base - y(v)),
        class: `bar ${cls}`,
        rx: 2,
      });
      rect.append(svg('title', {}, `${cls}: ${gopsText(v)} GOPS`));
      root.append(rect);
      root.append(svg('text', { x: x + bar / 2, y: y(v) - 4, 'text-anchor': 'middle', class: 'value' }, gopsText(v)));
    }
    root.append(
      svg('text', { x: cx, y: H - bottom + 16, 'text-anchor': 'middle', class: 'tick' }, `#${runs.length - shown.length + i + 1}`),
    );
    // The label on two lines: the shape, then the pipeline and dtype.
    const [shape, ...rest] = r.label.split(' ');
    root.append(svg('text', { x: cx, y: H - bottom + 30, 'text-anchor': 'middle', class: 'tick small' }, shape));
    root.append(svg('text', { x: cx, y: H - bottom + 44, 'text-anchor': 'middle', class: 'tick small' }, rest.join(' ')));
  });
  root.append(svg('line', { x1: left, x2: W - right, y1: base, y2: base, class: 'axisline' }));
  const legend = svg('g', { transform: `translate(${W - right - 150}, 8)` });
  legend.append(
    svg('rect', { x: 0, y: 0, width: 12, height: 12, class: 'bar webgpu', rx: 2 }),
    svg('text', { x: 17, y: 10, class: 'tick' }, 'WebGPU'),
  );
  legend.append(
    svg('rect', { x: 80, y: 0, width: 12, height: 12, class: 'bar cpu', rx: 2 }),
    svg('text', { x: 97, y: 10, class: 'tick' }, 'CPU'),
  );
  root.append(legend);
  chart.append(root);
}

// ---- adapter --------------------------------------------------------------------------------------

let ctx: GpuContext | null = null;
let noGpuReason = '';

function chips(items: string[], highlight: string[] = []) {
  const box = el('div', { class: 'chips' });
  if (!items.length) box.append(el('span', { class: 'muted' }, 'none'));
  for (const it of items) box.append(el('span', { class: highlight.includes(it) ? 'chip hot' : 'chip' }, it));
  return box;
}

function showAdapter(): void {
  adapterBox.replaceChildren();
  if (!ctx) {
    adapterBox.append(
      el('p', { class: 'warn', 'data-testid': 'no-webgpu' }, 'No WebGPU here: the demo runs on the CPU only.'),
      el('p', { class: 'muted small' }, noGpuReason),
    );
    return;
  }
  const s = ctx.summary;
  const dl = el('dl', { class: 'facts' });
  const fact = (k: string, v: string | Node) => dl.append(el('dt', {}, k), el('dd', {}, v));
  fact('adapter', el('strong', { 'data-testid': 'adapter-name' }, describeAdapter(s)));
  fact('vendor', s.vendor || '—');
  fact('architecture', s.architecture || '—');
  if (s.description) fact('description', s.description);
  if (s.device) fact('device', s.device);
  fact('kind', s.isSoftware ? 'software (a CPU emulation of a GPU)' : 'hardware');
  fact(
    'dot4',
    el(
      'span',
      { 'data-testid': 'dot4', class: ctx.dot4 === 'native' ? 'good' : 'warn' },
      ctx.dot4 === 'native'
        ? 'native: dot4U8Packed / dot4I8Packed (packed_4x8_integer_dot_product)'
        : 'emulated: manual unpack (no packed_4x8_integer_dot_product)',
    ),
  );
  const limit = (name: string) => {
    const v = s.limits[name];
    return v === undefined ? '—' : fmt.format(v);
  };
  fact(
    'limits',
    `storage binding ${limit('maxStorageBufferBindingSize')} B · workgroup storage ${limit('maxComputeWorkgroupStorageSize')} B · invocations/workgroup ${limit('maxComputeInvocationsPerWorkgroup')}`,
  );
  adapterBox.append(
    dl,
    el('h3', {}, `Features (${s.features.length})`),
    chips(s.features, ['timestamp-query', 'subgroups', 'shader-f16']),
    el('h3', {}, `WGSL language features (${s.wgslLanguageFeatures.length})`),
    chips(s.wgslLanguageFeatures, ['packed_4x8_integer_dot_product']),
  );
}

// ---- the Run button -------------------------------------------------------------------------------

function setStatus(text: string, cls = ''): void {
  statusLine.textContent = text;
  statusLine.className = `status ${cls}`;
}

function row(cells: (string | Node)[]) {
  return el('tr', {}, ...cells.map((c) => el('td', {}, c)));
}

async function run(): Promise<void> {
  let s: Settings;
  try {
    s = readSettings();
  } catch (e) {
    setStatus((e as Error).message, 'bad');
    return;
  }
  runButton.disabled = true;
  cancelRequested = false;
  cancelButton.hidden = false;
  const gpu = ctx && !ctx.lost ? ctx : null;
  progress.max = (gpu ? 2 : 1) * (s.repeats + 1);
  progress.value = 0;
  progress.hidden = false;
  resultCard.classList.add('stale');
  const previous = { state: agreement.dataset.state ?? 'idle', text: agreement.textContent ?? '' };
  agreement.dataset.state = 'running';
  agreement.textContent = 'Running…';
  try {
    setStatus('Drawing random operands…');
    await nextFrame();
    const problem: GemmProblem = {
      lhs: randomOperand(s.lhsType, s.M, s.K, s.lhsOrder),
      rhs: randomOperand(s.rhsType, s.K, s.N, s.rhsOrder),
      lhsZeroPoint: s.lhsZeroPoint,
      rhsZeroPoint: s.rhsZeroPoint,
      pipeline: buildPipeline(s),
    };
    const ops = 2 * s.M * s.N * s.K;
    const gops = (ms: number) => ops / (ms * 1e6);
    const onGpu = gpu ? await timeRuns('WebGPU', s.repeats, (t) => gpu.gemm(problem, t)) : null;
    const onCpu = await timeRuns('CPU', s.repeats, async () => gemm(problem, { backend: 'cpu' }));
    const label = `${s.M}×${s.N}×${s.K} ${s.preset} → ${onCpu.result.dtype}`;

    timingsBody.replaceChildren();
    const spread = (t: Timed) => `min ${t.minMs.toFixed(1)}, max ${t.maxMs.toFixed(1)} ms`;
    if (onGpu) {
      const gpuNote = onGpu.gpuMs !== null ? `GPU pass ${onGpu.gpuMs.toFixed(2)} ms (timestamps); ` : '';
      timingsBody.append(
        row([
          `WebGPU (${ctx!.summary.architecture || 'adapter'}, dot4 ${ctx!.dot4})`,
          `${onGpu.medianMs.toFixed(2)} ms`,
          gopsText(gops(onGpu.medianMs)),
          gpuNote + spread(onGpu),
        ]),
      );
    } else {
      timingsBody.append(row(['WebGPU', '—', '—', 'not available in this browser']));
    }
    timingsBody.append(
      row(['CPU (the fastest exact CPU kernel)', `${onCpu.medianMs.toFixed(2)} ms`, gopsText(gops(onCpu.medianMs)), spread(onCpu)]),
    );
    const ratio = onGpu ? onCpu.medianMs / onGpu.medianMs : null;
    resultNote.textContent =
      `${label}, ${s.lhsType} × ${s.rhsType}, ${s.repeats} timed run${s.repeats > 1 ? 's' : ''} each` +
      (ratio !== null
        ? `; WebGPU is ${ratio >= 1 ? `${times(ratio)} faster than` : `${times(1 / ratio)} slower than`} the CPU here.`
        : '.');

    if (onGpu) {
      const c = compare(onGpu.result, onCpu.result);
      const ok = c.equal === c.total && c.first === null;
      agreement.dataset.state = ok ? 'match' : 'mismatch';
      agreement.dataset.equal = String(c.equal);
      agreement.dataset.total = String(c.total);
      agreement.textContent = ok
        ? `✔ bit-exact: all ${fmt.format(c.total)} elements match (WebGPU = CPU, ${onCpu.result.dtype})`
        : `✘ NOT bit-exact: ${fmt.format(c.total - c.equal)} of ${fmt.format(c.total)} elements differ; ${c.first}`;
    } else {
      agreement.dataset.state = 'cpu-only';
      agreement.textContent = `CPU only (no WebGPU): ${fmt.format(s.M * s.N)} elements computed, nothing to compare with.`;
    }
    runs.push({ label, webgpu: onGpu ? gops(onGpu.medianMs) : null, cpu: gops(onCpu.medianMs) });
    drawChart();
    setStatus(`Done: ${label}.`, 'good');
  } catch (e) {
    if (e instanceof Cancelled) {
      // The previous results were not replaced: they are current again.
      agreement.dataset.state = previous.state;
      agreement.textContent = previous.text;
      setStatus('Cancelled: the results below are from the previous run.');
    } else {
      agreement.dataset.state = 'error';
      agreement.textContent = `Error: ${(e as Error).message}`;
      setStatus(`${(e as Error).name}: ${(e as Error).message}`, 'bad');
      console.error(e);
    }
  } finally {
    runButton.disabled = false;
    cancelButton.hidden = true;
    progress.hidden = true;
    resultCard.classList.remove('stale');
  }
}

// ---- start ----------------------------------------------------------------------------------------

function syncZeroPoint(side: 'lhs' | 'rhs'): void {
  // A sensible default when the type changes: the middle of the type's range.
  const zp = $<HTMLInputElement>(`${side}-zp`);
  const type = sel(`${side}-type`);
  if (type === 'int8' && zp.value === '128') zp.value = '0';
  if (type === 'uint8' && zp.value === '0') zp.value = '128';
}

function init(): void {
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void run();
  });
  cancelButton.addEventListener('click', () => {
    cancelRequested = true;
    setStatus('Cancelling after the current run…');
  });
  $('lhs-type').addEventListener('change', () => syncZeroPoint('lhs'));
  $('rhs-type').addEventListener('change', () => syncZeroPoint('rhs'));
  const hint = () => (pipelineHint.textContent = PRESET_HINTS[sel('pipeline') as Preset]);
  $('pipeline').addEventListener('change', hint);
  hint();
  drawChart();
  runButton.disabled = true;
  (async () => {
    try {
      if (!('gpu' in navigator)) {
        throw new Error(
          window.isSecureContext
            ? 'navigator.gpu is missing: this browser has no WebGPU, or it is disabled. Fix: in Chrome on Linux, or headless, ' +
                'start it with --enable-unsafe-webgpu (and --use-webgpu-adapter=swiftshader on a machine without a GPU; ' +
                'as root also --no-sandbox, or Chrome does not start).'
            : 'navigator.gpu is missing: WebGPU needs a secure context (https:// or http://localhost / 127.0.0.1).',
        );
      }
      ctx = await GpuContext.create({ allowSoftware: true, timestamps: true });
      setStatus(`Ready: ${describeAdapter(ctx.summary)}.`);
    } catch (e) {
      ctx = null;
      noGpuReason = (e as Error).message;
      setStatus('No WebGPU adapter: runs use the CPU only.', 'warn');
    }
    showAdapter();
    document.body.dataset.ready = 'true';
    runButton.disabled = false;
  })();
}

init();
