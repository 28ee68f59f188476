import type { ChildProcess } from 'node:child_process'

/** One line a child process printed, and its JSON when it was a log line. */
export interface ChildLine {
  text: string
  json?: Record<string, any>
}

/**
 * The lines a spawned server prints on stdout and stderr, as they arrive, and a way to wait for
 * one: `waitFor` resolves with the first line (from the start) that matches, and throws with the
 * last lines printed when the process exits first or `ms` pass. `echo` copies each line to this
 * process's stderr under a name (for debugging a test).
 */
export function childLines(child: ChildProcess, o: { name: string; echo?: boolean }) {
  const lines: ChildLine[] = []
  let waiters: Array<() => void> = []
  let ended = false
  const wake = () => {
    const w = waiters
    waiters = []
    for (const f of w) f()
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      ended = true
      wake()
      resolve({ code, signal })
    })
  )
  for (const stream of [child.stdout, child.stderr]) {
    let rest = ''
    stream?.on('data', (d) => {
      const parts = (rest + String(d)).split('\n')
      rest = parts.pop()!
      for (const text of parts) {
        if (!text.trim()) continue
        let json: Record<string, any> | undefined
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        lines.push({ text, json })
        if (o.echo) process.stderr.write(`[${o.name}] ${text}\n`)
      }
      wake()
    })
  }
  const last = () =>
    lines
      .slice(-15)
      .map((l) => l.text)
      .join('\n')
  async function waitFor(match: (l: ChildLine) => boolean, ms = Infinity): Promise<ChildLine> {
    const until = Date.now() + ms
    for (let seen = 0; ;) {
      for (; seen < lines.length; seen++) if (match(lines[seen])) return lines[seen]
      if (ended) throw new Error(`${o.name} exited before the line awaited; its last lines:\n${last()}`)
      if (Date.now() > until)
        throw new Error(`${o.name} printed no such line within ${ms} ms; its last lines:\n${last()}`)
      await new Promise<void>((resolve) => {
        waiters.push(resolve)
        if (Number.isFinite(ms)) setTimeout(resolve, 200)
      })
    }
  }
  return { lines, exited, waitFor }
}
