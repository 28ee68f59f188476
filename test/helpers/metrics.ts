/** The value of one series, or undefined when the scrape has none. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  for (const line of text.split('\n')) {
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/)
    if (!m || m[1] !== name) continue
    const have: string[] = (m[2] ?? '').match(/\w+="(?:[^"\\]|\\.)*"/g) ?? []
    if (have.length === wanted.length && wanted.every((w) => have.includes(w))) return Number(m[3])
  }
  return undefined
}
