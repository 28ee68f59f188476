type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent'
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }
let threshold: Level = (process.env.LOG_LEVEL as Level) || 'info'

function write(level: Level, msg: string, fields?: Record<string, unknown>) {
  if (order[level] < order[threshold]) return
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })
  process.stderr.write(line + '\n')
}

/** Structured JSON lines on stderr; stdout stays free for what a command prints for the operator. */
export const logger = {
  setLevel(level: Level) {
    threshold = level
  },
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields)
}
