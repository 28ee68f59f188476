import type { App, Platform } from './declarations.ts'
import type { JobDefinition } from './jobs/index.ts'
import type { Describe } from './openapi/builder.ts'
import type { ProblemBody } from './errors/index.ts'

/**
 * What a CLI command is handed: the platform, the app (its services with their hooks, as
 * REST calls them; not listening), the parsed flags and positionals, and where to write.
 */
export interface CliContext {
  platform: Platform
  app: App
  values: Record<string, string | boolean | undefined>
  /** The positional after `<area> <action>`, e.g. a token id. */
  arg?: string
  out: (line: string) => void
  /** Refuses the command line: exit code 2 with this message. */
  fail: (message: string) => never
  /** A flag's value, or a refusal naming the flag. */
  required(flag: string): string
  /** A comma-separated flag as a list, if given. */
  list(flag: string): string[] | undefined
  /** `--tenant`, checked to exist. */
  tenant(): string
  /** The whole of standard input, without its last line break (`--password-stdin`). */
  input(): Promise<string>
}

/** `records <area> <action> …`: one admin command a plugin brings. */
export interface CliCommand {
  area: string
  action: string
  run(context: CliContext): Promise<void>
}

/**
 * One feature, declared in one object: core receives the list (plugins/index.ts) and
 * names no plugin. Everything core must know of a feature before or beside its services
 * is said here.
 */
export interface Plugin {
  name: string
  /** Registers the feature's services, hooks and Koa middleware. */
  configure(app: App): void
  /** Service paths whose items take `POST <path>/<id>:<method>` (Feathers custom methods). */
  colonMethods?: readonly string[]
  /** Paths whose request bodies the feature reads itself as a stream, not as JSON. */
  streamingPaths?: readonly RegExp[]
  /**
   * The canonical spelling of a path the feature serves under others (SCIM's endpoint names in
   * any case: Microsoft's collection asks for `/users`), or undefined. Applied before routing;
   * the OpenAPI contract checker judges such a request as one to the canonical path.
   */
  canonicalPath?: (path: string) => string | undefined
  /**
   * Refusals on these paths, from any layer (authentication, rate limit, routing, the feature
   * itself), in the protocol's own error format instead of application/problem+json (SCIM's
   * errors), built from the problem so they keep its members (`code`, `traceId`).
   */
  problemFormats?: readonly ProblemFormat[]
  /** Jobs the feature runs on the scheduler (`<area>.<action>`, ids only, safe to run twice). */
  jobs?(app: App): JobDefinition[]
  /** Admin CLI commands. */
  cli?: readonly CliCommand[]
  /** Its part of the OpenAPI document (tag, paths, schemas); the document lists them in plugin order. */
  describe?: Describe
}

/** How refusals on some paths are written (see Plugin.problemFormats). */
export interface ProblemFormat {
  paths: RegExp
  contentType: string
  render(problem: ProblemBody): unknown
}

/** The OpenAPI descriptions of `plugins`, in their order. */
export function descriptionsOf(plugins: readonly Plugin[]): Describe[] {
  return plugins.flatMap((p) => (p.describe ? [p.describe] : []))
}
