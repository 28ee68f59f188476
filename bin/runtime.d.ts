// Types of bin/runtime.js (plain JavaScript: it runs before tsx or the build is chosen), for the tests and benchmarks that use it.
export interface Runtime {
  from: 'build' | 'sources'
  why: string
  stale?: boolean
}
export const projectRoot: string
export function requireSupportedNode(what: string): void
export function chooseRuntime(env?: NodeJS.ProcessEnv): Runtime
export function importEntry(entry: string, runtime: Runtime): Promise<Record<string, unknown>>
export function followParent(): void
