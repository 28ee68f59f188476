import { closeSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import pino from 'pino'
import { redactFields, scrubSecrets } from './log-redaction.ts'

export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent'

const levelValue = (level: Level | undefined): number =>
  level === 'silent' ? Infinity : (pino.levels.values[level ?? 'info'] ?? pino.levels.values.info)

export interface LogFileOptions {
  /** Path of the file; `{pid}` in it becomes the process id (one file per process). Null: none. */
  file: string | null
  /** Lines at this level and above go to the file, whatever the stderr level. */
  fileLevel?: Level
  /** Past this size the file becomes `<file>.1` (replacing the previous one) and a new one starts. */
  fileMaxBytes?: number
}

/**
 * An append-only log file written in blocks (at 64 KiB or a quarter-second after the first
 * line of a block, and at exit), so a line per request costs no system call of its own.
 */
class LogFile {
  private fd: number
  private size: number
  private pending: string[] = []
  private pendingBytes = 0
  private timer: NodeJS.Timeout | undefined
  constructor(
    readonly path: string,
    public level: number,
    public maxBytes: number
  ) {
    mkdirSync(dirname(path), { recursive: true })
    this.fd = openSync(path, 'a')
    this.size = statSync(path).size
  }
  write(line: string) {
    this.pending.push(line)
    this.pendingBytes += line.length
    if (this.pendingBytes >= 65_536) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), 250).unref()
  }
  flush() {
    clearTimeout(this.timer)
    this.timer = undefined
    if (!this.pending.length) return
    const block = Buffer.from(this.pending.join(''))
    this.pending = []
    this.pendingBytes = 0
    writeSync(this.fd, block)
    this.size += block.length
    if (this.size >= this.maxBytes) {
      closeSync(this.fd)
      renameSync(this.path, `${this.path}.1`)
      this.fd = openSync(this.path, 'a')
      this.size = 0
    }
  }
  close() {
    this.flush()
    closeSync(this.fd)
  }
}

let stderrLevel = levelValue(process.env.LOG_LEVEL as Level)
let file: LogFile | undefined
const pretty = prettyPrinter()

/** pino-pretty when stderr is a terminal (LOG_FORMAT=json keeps JSON there, LOG_FORMAT=pretty forces it). */
function prettyPrinter(): ((line: string) => string) | undefined {
  const format = process.env.LOG_FORMAT
  if (format === 'json' || (format !== 'pretty' && !process.stderr.isTTY)) return undefined
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty')
  return prettyFactory({ colorize: !!process.stderr.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

/** pino's destination: every line to stderr at its level, and to the log file at the file's. */
const destination = {
  [pino.symbols.needsMetadataGsym]: true,
  lastLevel: 0,
  write(line: string) {
    if (this.lastLevel >= stderrLevel) process.stderr.write(pretty ? pretty(line) : line)
    if (file && this.lastLevel >= file.level) file.write(line)
  }
}

const base = pino(
  {
    level: 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
    // Known fields by name, whatever their value; then secrets by their shape anywhere in the line.
    formatters: { level: (label) => ({ level: label }), log: redactFields },
    hooks: { streamWrite: scrubSecrets }
  },
  destination
)

function applyLevels() {
  const lowest = Math.min(stderrLevel, file?.level ?? Infinity)
  base.level = lowest === Infinity ? 'silent' : pino.levels.labels[lowest]
}
applyLevels()

function openFile(o: LogFileOptions) {
  const path = o.file?.replaceAll('{pid}', String(process.pid))
  const level = levelValue(o.fileLevel ?? 'debug')
  const maxBytes = o.fileMaxBytes ?? 100 * 1024 * 1024
  if (file && file.path === path) {
    file.level = level
    file.maxBytes = maxBytes
    return
  }
  file?.close()
  file = path ? new LogFile(path, level, maxBytes) : undefined
}
// The same variables as config `log.file`, `.fileLevel`, `.fileMaxBytes`, read here too so lines before the config loads are kept.
if (process.env.LOG_FILE)
  openFile({
    file: process.env.LOG_FILE,
    fileLevel: process.env.LOG_FILE_LEVEL as Level,
    fileMaxBytes: Number(process.env.LOG_FILE_MAX_BYTES) || undefined
  })
process.on('exit', () => file?.flush())

type Fields = Record<string, unknown>

/**
 * The service's log: JSON lines through pino on stderr (pretty on a terminal), and in a
 * file when configured. Secrets never reach it: known fields are redacted by name, and
 * tokens, webhook secrets, bearer values, session cookies, URL passwords and signed-URL
 * signatures by their shape in every line (core/log-redaction.ts). stdout stays free
 * for what a command prints for the operator.
 */
export const logger = {
  /** The stderr level (config `logLevel`); the file keeps its own. */
  setLevel(level: Level) {
    stderrLevel = levelValue(level)
    applyLevels()
  },
  /** Config `log.file`, `log.fileLevel`, `log.fileMaxBytes`: the same file stays open across calls. */
  setFile(o: LogFileOptions) {
    openFile(o)
    applyLevels()
  },
  /** Whether a line at `level` would be written anywhere (skip building costly fields). */
  enabled: (level: Level) => level !== 'silent' && base.isLevelEnabled(level),
  log(level: Level, msg: string, fields?: Fields) {
    if (level !== 'silent') base[level](fields ?? {}, msg)
  },
  debug: (msg: string, fields?: Fields) => base.debug(fields ?? {}, msg),
  info: (msg: string, fields?: Fields) => base.info(fields ?? {}, msg),
  warn: (msg: string, fields?: Fields) => base.warn(fields ?? {}, msg),
  error: (msg: string, fields?: Fields) => base.error(fields ?? {}, msg),
  /** Written even when the level is `silent`: what made the process exit. */
  fatal: (msg: string, fields?: Fields) => {
    if (stderrLevel === Infinity) stderrLevel = levelValue('error')
    applyLevels()
    base.fatal(fields ?? {}, msg)
  },
  /** Writes out what the file holds in memory (before a test reads it). */
  flush: () => file?.flush()
}

/**
 * Node's warnings (DeprecationWarning, ExperimentalWarning, MaxListenersExceeded…) as log
 * lines instead of its plain-text printer on stderr. That printer is the `onWarning`
 * listener Node installs at start (a pinned runtime; test/logs/process-output.test.ts
 * shows it still is); `--no-warnings` turns it off too.
 */
export function logProcessWarnings() {
  for (const listener of process.listeners('warning'))
    if (listener.name === 'onWarning') process.removeListener('warning', listener)
  process.on('warning', (w: Error & { code?: string; detail?: string }) =>
    logger.warn(w.message, { warning: w.name, code: w.code, detail: w.detail, stack: w.stack })
  )
}
