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
