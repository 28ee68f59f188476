import type { AppConfig } from '../config.ts'
import { rangeProblem } from './address-ranges.ts'
import { corsConfigProblems } from './cors.ts'

/** What is wrong with the `http` settings beyond their shape (checked at start-up), each naming the setting. */
export function httpConfigProblems(http: AppConfig['http']): string[] {
  const proxies = http.trustProxy.flatMap((r) => {
    const problem = rangeProblem(r)
    return problem ? [`/http/trustProxy has ${problem}`] : []
  })
  return [...proxies, ...corsConfigProblems(http.cors)]
}
