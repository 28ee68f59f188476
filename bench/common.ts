/** What the benchmark scripts share: the tenant, its modules and the create payload. */

export const defaultTenant = 'bench'
export const benchModules = ['incident', 'corrective-action', 'inspection']

/** The payload every create request sends (a valid incident, as test/helpers/server.ts uses). */
export const createPayload = {
  title: 'Forklift clipped racking',
  description: 'A reversing forklift struck the end of aisle 4 racking; no one was hurt.',
  occurredAt: '2026-11-20T08:30:00Z',
  site: 'Leeds DC',
  category: 'near-miss',
  severity: 'medium'
}

export function median(values: number[]): number {
  if (!values.length) return NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/**
 * Runs a benchmark server as a child of run.ts: answers CPU-usage requests, stops on
 * 'stop', SIGTERM/SIGINT or a lost parent, and exits through process.exit so that
 * --cpu-prof can write its profile. `ready` is sent to the parent once listening.
 */
export function serveAsChild(close: () => Promise<void>, ready: Record<string, unknown>) {
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await close().catch(() => undefined)
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop())
  process.on('SIGINT', () => void stop())
  if (process.send) {
    process.on('message', (msg: { type?: string }) => {
      if (msg?.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage() })
      if (msg?.type === 'stop') void stop()
    })
    process.on('disconnect', () => void stop())
    process.send({ type: 'ready', ...ready })
  }
}
