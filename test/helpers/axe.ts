import axe from 'axe-core'
import type { Page } from 'playwright-core'

/**
 * axe-core in a Chromium page, for the accessibility tests: the WCAG 2.0 and 2.1 rules of levels A and AA, the
 * violations named so a failing test says which rule, on which element, and how to fix it.
 *
 * How the engine gets into the page: the service's pages allow only scripts carrying the response's nonce
 * (core/http/security-headers.ts), so `page.addScriptTag({ content })` adds an inline script the page refuses to run.
 * `page.evaluate(source)` is not the page running a script: Playwright sends it over the DevTools protocol
 * (Runtime.evaluate), which Chromium runs outside the page's Content-Security-Policy, so the page keeps its real
 * policy. `bypassCSP: true` on the context would work too, but it would turn the policy off for the page's own scripts
 * as well, and a test could then pass with a script the policy refuses in a real browser.
 */
const axeSource = axe.source

/** The levels the issue asks for: WCAG 2.0 and 2.1, A and AA. */
export const axeTags = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']

export interface AxeViolation {
  /** The rule, e.g. `color-contrast`. */
  id: string
  impact: string | null
  /** What the rule asks, in a sentence. */
  help: string
  helpUrl: string
  /** One entry per failing element: its selector and what axe says to fix there. */
  nodes: Array<{ target: string; fix: string }>
}

/** Runs axe on the page as it is now and answers its violations (none: an empty list). */
export async function axeViolations(page: Page, o: { exclude?: string[] } = {}): Promise<AxeViolation[]> {
  // A page navigated since the last run has lost the engine; a page that has it keeps the one it has.
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axeSource)
  const options = JSON.stringify({ runOnly: { type: 'tag', values: axeTags }, resultTypes: ['violations'] })
  const context = JSON.stringify({ include: [['html']], exclude: (o.exclude ?? []).map((s) => [s]) })
  // A string, not a function: tsx names inner functions with a helper (`__name`) the page does not have.
  return page.evaluate<AxeViolation[]>(`window.axe.run(${context}, ${options}).then((r) =>
    r.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      helpUrl: v.helpUrl,
      nodes: v.nodes.map((n) => ({
        target: n.target.map((t) => (Array.isArray(t) ? t.join(' >>> ') : t)).join(' '),
        fix: (n.failureSummary || '').replace(/\\s+/g, ' ').trim()
      }))
    }))
  )`)
}

/** The violations as lines a person reads in a test's failure: rule, impact, help, then each element and its fix. */
export function describeViolations(violations: AxeViolation[]): string {
  return violations
    .map((v) =>
      [
        `${v.id} (${v.impact ?? 'no impact given'}): ${v.help} <${v.helpUrl}>`,
        ...v.nodes.slice(0, 8).map((n) => `    at ${n.target}: ${n.fix}`),
        ...(v.nodes.length > 8 ? [`    and ${v.nodes.length - 8} more element(s)`] : [])
      ].join('\n')
    )
    .join('\n')
}

/**
 * axe's verdict on the page as one string: '' when it finds nothing, else `where` and the violations, so
 * `t.equal(await axeReport(page, 'home, phone'), '')` fails with the rules and elements in its message and diff.
 */
export async function axeReport(page: Page, where: string, o: { exclude?: string[] } = {}): Promise<string> {
  const found = await axeViolations(page, o)
  return found.length ? `axe on ${where} (${page.url()}):\n${describeViolations(found)}` : ''
}
