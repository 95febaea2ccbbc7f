// The `qgemm` command line: `qgemm run SPEC.json` executes one operation of the JSON spec contract,
// `qgemm gemm --lhs A.npy --rhs B.npy --out C.npy ...` does the same GEMM from flags, `qgemm info` shows
// the WebGPU adapter, `qgemm verify` checks every kernel on it (./verify.ts). Flags are parsed by commander (negative numbers as values, per-command --help,
// --version). Exit codes: 0 ok; 2 bad input, as one stderr line `qgemm: error: FIELD: ...` naming the
// field, with no output file written or changed; 1 a failure of the machine (GPU, I/O, memory).
// `cli` is what bin/qgemm.mjs calls: commands that may touch a GPU run in a child process whose native
// stderr (Dawn's driver-probe warnings) is dropped, so the user's stderr carries only qgemm's lines.

import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { version } from '../../package.json';
import { InputError, QgemmError } from '../errors.ts';
import { isAllocationFailure } from '../problem/dst.ts';
import { DEFAULT_MAX_MEMORY, formatBytes, parseSize } from './budget.ts';
import { cmdGemm, cmdRun, type CommonOptions } from './commands.ts';
import { describeDevice } from '../api.ts';
import { formatInfo } from './info.ts';
import { cmdVerify } from './verify.ts';
import { cmdTune, readTuningFile } from './tune.ts';
import { brief } from './json.ts';
import { consoleFd, consoleToStderr, messagesFd, outputFd, writeFd } from './quiet.ts';
import { signalsReleased } from './files.ts';

/** Where the CLI writes: stdout for results and help, stderr for its one-line messages. */
interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /**
   * Lines on stderr that say how a command goes, not why it failed: warnings, -v, the progress of tune
   * and verify. The same stream as `err`, except in the quiet child (./quiet.ts), where they go through
   * the pipe that does not count as the child having said why it failed. Absent: `err`.
   */
  note?(text: string): void;
}

const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** Longest message line printed: a last guard against echoing unbounded input. */
const MAX_LINE = 1000;

const EPILOG = `
Exit codes: 0 ok, 1 failure of the machine (GPU, I/O, memory), 2 bad input (one line naming the field).
Docs: README.md "The CLI" (spec format, path rules, memory cap).`;

function oneLine(text: string): string {
  // Any control character (a carriage return in a name from a spec included) would break the one line.
  const flat = text.replace(/\s*[\n\r]\s*/g, ' ');
  const line = Array.from(flat, (c) => (c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127 ? ' ' : c))
    .join('')
    .trim();
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}...` : line;
}

function program(io: CliIo, run: (p: Promise<void>) => void): Command {
  const note = io.note ?? io.err;
  const prog = new Command('qgemm')
    .description('Quantized (uint8/int8) GEMM with gemmlowp/TFLite semantics, on WebGPU or the CPU, bit-exact.')
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help (also: qgemm COMMAND --help)')
    .addHelpText('after', EPILOG)
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err, outputError: () => {} });
  const backend = () =>
    new Option('--backend <name>', 'cpu, webgpu (any adapter, software included) or auto (a hardware GPU, else the CPU)')
      .choices(['cpu', 'webgpu', 'auto'])
      .default('cpu');
  const maxMemory = () =>
    new Option(
      '--max-memory <size>',
      `memory cap for operands, result and working memory, e.g. 8G (default ${formatBytes(DEFAULT_MAX_MEMORY)})`,
    );
  const verbose = () => new Option('-v, --verbose', 'print what ran (backend, kernel, time) on stderr');
  const tuning = () => new Option('--tuning <file>', 'a tuning table from `qgemm tune` for this adapter (docs/gpu.md "Tuning")');
  const common = (o: { backend: string; maxMemory?: string; verbose?: boolean; tuning?: string }): CommonOptions => ({
    backend: o.backend as CommonOptions['backend'],
    ...(o.tuning === undefined ? {} : readTuningFile('--tuning', o.tuning)),
    maxMemory: o.maxMemory === undefined ? DEFAULT_MAX_MEMORY : parseSize('--max-memory', o.maxMemory),
    warn: (m) => note(`${oneLine(m)}\n`),
    verbose: o.verbose ? (m) => note(`${oneLine(m)}\n`) : undefined,
  });
  const setup = (cmd: Command) => cmd.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err, outputError: () => {} });

  setup(prog.command('run'))
    .description('run one op of a JSON spec (README "Spec format"); relative paths resolve against the spec\'s folder')
    .argument('<SPEC>', 'the spec file, e.g. spec.json')
    .addOption(backend())
    .option('--allow-outside', "let relative paths in the spec leave the spec's folder (e.g. ../data/A.npy)")
    .addOption(maxMemory())
    .addOption(verbose())
    .addOption(tuning())
    .addHelpText('after', EPILOG)
    .action((spec: string, o) => run(cmdRun(spec, !!o.allowOutside, common(o))));

  setup(prog.command('gemm'))
    .description('one GEMM from flags; paths are relative to the current folder')
    .requiredOption('--lhs <path>', 'uint8/int8 .npy, shape [M,K]')
    .requiredOption('--rhs <path>', 'uint8/int8 .npy, shape [K,N]')
    .requiredOption('--out <path>', 'the result .npy, shape [M,N]')
    .option('--lhs-zero-point <int|path>', 'an int32 (e.g. 3) or an .npy vector of length M')
    .option('--rhs-zero-point <int|path>', 'an int32 (e.g. -7) or an .npy vector of length N')
    .option('--pipeline <json|@file>', 'the output stages as JSON, or @stages.json')
    .option('--bit-depth <L,R[,ROUNDING]>', 'requantize operands to L and R bits (1..8) while packing')
    .addOption(backend())
    .addOption(maxMemory())
    .addOption(verbose())
    .addOption(tuning())
    .addHelpText('after', EPILOG)
    .action((o) => run(cmdGemm(o, common(o))));

  setup(prog.command('info'))
    .description('show the WebGPU adapter and CPU that qgemm would use, and the kernels it would pick')
    .option('--json', 'print the full data (adapter, features, limits, capabilities) as JSON')
    .addOption(tuning())
    .addHelpText('after', EPILOG)
    .action((o: { json?: boolean; tuning?: string }) =>
      run(
        (async () => {
          const d = await describeDevice(o.tuning === undefined ? {} : readTuningFile('--tuning', o.tuning).gpu);
          io.out(o.json ? `${JSON.stringify(d, null, 2)}\n` : formatInfo(d));
        })(),
      ),
    );
  setup(prog.command('tune'))
    .description('sweep kernel configurations on this adapter within a time budget, verify the winners, write a tuning table')
    .addOption(new Option('--backend <name>', 'webgpu (any adapter, software included)').choices(['webgpu']).default('webgpu'))
    .option('--budget <time>', 'time budget, e.g. 30s or 5m (default 5m)')
    .option('--classes <list>', 'shape classes, comma-separated: square, decode, conv, decode-u4 (default all)')
    .option('--out <file>', 'where the table goes', 'qgemm-tuning.json')
    .option('--seed <file>', 'a table of this adapter to search around (default: its committed table, if any; none: no seed)')
    .option('--json', 'print the full report as JSON')
    .addHelpText('after', `\nUse the table with --tuning FILE (gemm, run, info) or GpuContext.create({ tuning }).${EPILOG}`)
    .action((o) => run(cmdTune(o, { out: io.out, err: note })));
  setup(prog.command('verify'))
    .description('check every kernel this adapter (or CPU) runs, each forced, bit for bit against the reference')
    .addOption(
      new Option('--backend <name>', 'webgpu (any adapter, software included) or cpu').choices(['webgpu', 'cpu']).default('webgpu'),
    )
    .option('--json', 'print the report as JSON')
    .option('--kernel <id...>', 'only these kernels')
    .addHelpText(
      'after',
      '\nProgress (the adapter, then each kernel as it is done) goes to stderr; the table or JSON to stdout.\n' +
        'Exit codes: 0 every kernel exact, 1 any mismatch, a --kernel that cannot run here, or a failure of the machine, 2 bad input.',
    )
    .action((o) => run(cmdVerify(o, { out: io.out, err: note })));
  return prog;
}

/** The field a commander error is about: the option it names, else the command line. */
function commanderField(e: CommanderError): string {
  if (e.code === 'commander.missingArgument') return 'SPEC'; // run's one argument
  // Too many: run takes one SPEC, the other commands no argument at all.
  if (e.code === 'commander.excessArguments') return /for '(?:run|[\w-]+ run)'/.test(e.message) ? 'SPEC' : 'arguments';
  if (e.code === 'commander.unknownCommand') return 'command';
  return /'(--?[\w-]+)/.exec(e.message)?.[1] ?? 'command';
}

/**
 * `qgemm help frob`: one error line, as for `qgemm frob` (commander would print the whole usage, then
 * fail); `qgemm help gemm extra` too (commander would ignore the extra argument).
 */
function checkHelpTopic(prog: Command, argv: string[]): void {
  const topic = argv[1];
  if (argv[0] !== 'help' || topic === undefined || topic === '--help' || topic === '-h') return; // help's help: commander's
  if (!prog.commands.some((c) => c.name() === topic))
    throw new InputError('command', `unknown command ${JSON.stringify(topic.slice(0, 40))}`);
  if (argv.length > 2) throw new InputError('help', `takes one command, got ${argv.length - 1} arguments`);
}

/**
 * An argument whose bytes are not valid UTF-8 reaches Node with U+FFFD in their place: as a file name it
 * would open or write another file (the one the replaced bytes spell). Refused, naming its flag.
 */
function checkArgumentsDecoded(argv: string[]): void {
  argv.forEach((arg, i) => {
    if (!arg.includes('\uFFFD')) return;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.split('=')[0], true] : [argv[i - 1] ?? '', false];
    const field = inline || flag.startsWith('-') ? flag : `argument ${i + 1}`;
    throw new InputError(field, `${brief(arg)} is not valid UTF-8 (Node reads U+FFFD in place of its bytes): it would name another file`);
  });
}

/**
 * Boolean short flags given together (`-vh`, `-vv`) as one argument each (`-v -h`, `-v -v`), so that the
 * checks below see a request for help, or a flag given twice, as they do when the flags are apart. A
 * value-taking flag's value (`--lhs -vh`: a file) is left as it is.
 */
function splitShortFlags(prog: Command, argv: string[]): string[] {
  const cmd = prog.commands.find((c) => c.name() === argv[0]);
  const options = cmd?.options ?? [];
  const booleans = new Set(['h', ...options.filter((o) => !o.required && !o.optional).map((o) => o.short?.slice(1))]);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') return [...out, ...argv.slice(i)];
    const takesValue = options.some((o) => o.required && (o.long === a || o.short === a));
    if (/^-[A-Za-z]{2,}$/.test(a) && [...a.slice(1)].every((c) => booleans.has(c))) out.push(...[...a.slice(1)].map((c) => `-${c}`));
    else out.push(a);
    if (takesValue && i + 1 < argv.length) out.push(argv[++i]);
  }
  return out;
}

/**
 * A flag given twice (`--lhs A.npy --lhs B.npy`) is an InputError naming it, where commander would keep
 * the last one silently; so is a flag whose value is missing, followed by another flag (`--out --lhs`:
 * commander would take `--lhs` as the path). A variadic flag (verify's `--kernel a b`) may be repeated,
 * and a command line that asks for help gets it. So is `-V` with anything else. Before any parsing.
 */
function checkRepeatedFlags(prog: Command, argv: string[]): void {
  const cmd = prog.commands.find((c) => c.name() === argv[0]);
  const help = argv.includes('--help') || argv.includes('-h');
  if (!cmd || help) {
    // no flag values to tell apart here: any -V before `--` is the flag
    const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
    if (argv.length > 1 && argv.slice(0, end).some((a) => a === '-V' || a === '--version')) throw versionNotAlone(argv);
    return;
  }
  const known = (a: string | undefined) =>
    a !== undefined && (a === '-V' || a === '--version' || cmd.options.some((x) => x.long === a.split('=')[0] || x.short === a));
  const seen = new Set<string>();
  for (let i = 1; i < argv.length && argv[i] !== '--'; i++) {
    const [flag, inline] = argv[i].startsWith('--') ? [argv[i].split('=')[0], argv[i].includes('=')] : [argv[i], false];
    const o = cmd.options.find((x) => x.long === flag || x.short === flag);
    if (flag === '-V' || flag === '--version') throw versionNotAlone(argv);
    if (!o?.long) continue;
    if (!inline && o.required && known(argv[i + 1])) {
      throw new InputError(o.long, `expected a value, got the flag ${argv[i + 1]}: give ${o.long} its value`);
    }
    if (!inline && (o.required || (o.optional && !argv[i + 1]?.startsWith('-')))) i++; // its value, whatever it looks like
    if (o.variadic) continue;
    if (seen.has(o.long)) throw new InputError(o.long, 'given twice: give each flag once');
    seen.add(o.long);
  }
}

/** `-V` prints the version and nothing else: beside a command or an argument it would skip them unsaid. */
const versionNotAlone = (argv: string[]) =>
  new InputError(
    '--version',
    `prints the version only: give it alone, not with ${brief(argv.filter((a) => a !== '-V' && a !== '--version').join(' '))}`,
  );

/**
 * The Vulkan loader and SwiftShader print an error per instance when XDG_RUNTIME_DIR is unset (as in
 * containers and CI); give them a private one (the child process of `cli` drops the rest of Dawn's noise).
 */
function quietVulkan(): void {
  if (process.env.XDG_RUNTIME_DIR) return;
  const dir = join(tmpdir(), `qgemm-runtime-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = dir;
  } catch {
    // cosmetic only
  }
}

/** Runs the CLI in this process; returns the exit code. Never throws. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  quietVulkan();
  if (argv.length === 0) {
    io.err(program(io, () => {}).helpInformation());
    return 2;
  }
  let work: Promise<void> | null = null;
  try {
    const prog = program(io, (p) => (work = p));
    argv = splitShortFlags(prog, argv);
    if (argv[0] === 'help' && argv[1] === 'help') argv = argv.slice(1); // help on help: as plain help (commander fails on it)
    checkHelpTopic(prog, argv);
    checkArgumentsDecoded(argv);
    checkRepeatedFlags(prog, argv);
    await prog.parseAsync(argv, { from: 'user' });
    if (work) await work;
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return 0; // --help, --version
      io.err(`qgemm: error: ${commanderField(e)}: ${oneLine(e.message.replace(/^error: /, ''))}\n`);
      return 2;
    }
    if (e instanceof InputError) {
      // The context's `tuning` option is the --tuning flag's table here (a table of another adapter), and
      // tune()'s `seed` the --seed flag's.
      const flag = /^(tuning|seed)(\.|$)/.test(e.field) ? '--' : '';
      io.err(`qgemm: error: ${flag}${oneLine(e.message)}\n`);
      return 2;
    }
    const err = e as Error;
    const kind = isAllocationFailure(e) ? 'OutOfMemory' : e instanceof QgemmError ? err.name : 'internal error';
    io.err(`qgemm: ${kind}: ${oneLine(String(err?.message ?? err).split('\n')[0])}\n`);
    if (process.env.QGEMM_DEBUG) io.err(`${err?.stack}\n`);
    return 1;
  }
}

/**
 * The CLI bundle's entry, run by ./launch.ts (bin/qgemm.mjs), which decides where a command runs. In the
 * quiet child (see quiet.ts) results and messages go to the inherited fds, elsewhere to stdout and stderr.
 */
export async function cli(argv: string[]): Promise<number> {
  const fd = messagesFd();
  const outFd = outputFd();
  const noteFd = consoleFd();
  consoleToStderr();
  const code =
    fd === null
      ? await main(argv)
      : await main(argv, {
          out: outFd === null ? processIo.out : (text) => writeFd(outFd, text),
          err: (text) => writeFd(fd, text),
          note: (text) => writeFd(noteFd ?? fd, text),
        });
  await signalsReleased(); // a signal held during a write ends the process before it exits by itself
  return code;
}
