/** What a peer-suite runner hands back, and how the runners show evidence. */

export interface Failure {
  /** The request the suite names (Postman item or Runscope step note), with its folder. */
  where: string
  /** The assertion as the suite words it, or "script error" / "request error". */
  assertion: string
  /** Why it failed: the assertion's message, the actual value. */
  detail: string
  /** The response it looked at: method, path, status and an excerpt of the body. */
  response?: string
}

export interface SuiteResult {
  suite: string
  passed: number
  failed: number
  failures: Failure[]
  /** What the runner changed or left out of the suite, said once at the top of its report. */
  notes: string[]
}

export type Say = (line: string) => void

/** One line of a body, cut to `max` characters. */
export function excerpt(text: string, max = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}

/** `N passed, N failed`, the line CI and people grep for. */
export function tally(result: { passed: number; failed: number }): string {
  return `${result.passed} passed, ${result.failed} failed`
}

export function showFailure(say: Say, f: Failure, indent = '    ') {
  say(`${indent}✗ ${f.assertion}: ${f.detail}`)
  if (f.response) say(`${indent}  response: ${f.response}`)
}
