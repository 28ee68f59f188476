import type { App, Platform } from './declarations.ts'
import type { Migration } from './db/migrate.ts'
import type { JobDefinition } from './jobs/index.ts'
import type { Describe } from './openapi/builder.ts'
import type { ProblemBody } from './errors/index.ts'
import type { GraphQLPart } from './graphql/schema-part.ts'

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

export type { Migration } from './db/migrate.ts'

/**
 * One feature, declared in one object: core receives the list (plugins/index.ts) and
 * names no plugin. Everything core must know of a feature before or beside its services
 * is said here.
 */
export interface Plugin {
  /** Unique in the list; names its migrations (`<name>/<migration>`) and what depends on it. */
  name: string
  /**
   * The plugins this one needs before it: those whose `*.shared.ts` it imports, and those whose
   * tables its own refer to or read. Start-up stops when one is missing from the list or comes
   * after this one (checkDependencies); test/plugins/dependencies.test.ts checks the imports.
   */
  dependsOn?: readonly string[]
  /**
   * The feature's tables, in order: run at start-up after core's and those of the plugins
   * before it, each once per database (core/db/migrate.ts). Files in `plugins/<name>/migrations/`.
   */
  migrations?: readonly Migration[]
  /** Registers the feature's services, hooks and Koa middleware. */
  configure(app: App): void
  /** Service paths whose items take `POST <path>/<id>:<method>` (Feathers custom methods). */
  colonMethods?: readonly string[]
  /** Paths whose request bodies are not the app's plain JSON: another JSON media type, or a stream (see BodyRule). */
  bodies?: readonly BodyRule[]
  /**
   * Paths the feature routes itself, in its own spelling (SCIM's `/Users/`, the GraphQL endpoint):
   * the route guard refuses none of them, the JSON reader reads their bodies only as `bodies`
   * says, and metrics name them by the pattern.
   */
  ownRoutes?: readonly RegExp[]
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
  /**
   * Work the feature runs in every instance beside the requests, from start to shutdown, whether or not the instance
   * runs jobs (the records plugin builds the indexes modules declare). Started once the instance listens; stopped
   * first at shutdown.
   */
  background?(app: App): BackgroundTask
  /** Jobs the feature runs on the scheduler (`<area>.<action>`, ids only, safe to run twice). */
  jobs?(app: App): JobDefinition[]
  /** Admin CLI commands. */
  cli?: readonly CliCommand[]
  /** Its part of the OpenAPI document (tag, paths, schemas); the document lists them in plugin order. */
  describe?: Describe
  /** Its types, queries and mutations in each caller's GraphQL schema (core/graphql/schema-part.ts), in plugin order. */
  graphql?: GraphQLPart
}

/** See Plugin.background. */
export interface BackgroundTask {
  start(): void
  /** Ends the work: what is under way is cancelled or finished, nothing is left running. */
  stop(): Promise<void>
  /** Settles when no work is under way (the first pass done): tests and tools that need the database quiet wait for it. */
  idle?(): Promise<void>
  /** What readiness reports degraded while the work is not done (e.g. indexes still building), under its name. */
  degraded?(): Record<string, unknown> | undefined
}

/**
 * How the request bodies on some paths are read (Plugin.bodies): as JSON of these media types
 * by the app's reader (refusals in the path's problem format), or handed unread to the
 * service as `params.bodyStream` (bulk's NDJSON).
 */
export type BodyRule = { paths: RegExp; mediaTypes: readonly string[] } | { paths: RegExp; stream: true }

/** How refusals on some paths are written (see Plugin.problemFormats). */
export interface ProblemFormat {
  paths: RegExp
  contentType: string
  render(problem: ProblemBody): unknown
}

/**
 * Refuses a plugin list that cannot start: a name listed twice (or `core`, which owns core's
 * migrations), or a declared dependency missing from the list or listed after its dependant.
 * The list is the order things happen in (migrations, configuration, the OpenAPI document),
 * so it is checked, not sorted.
 */
export function checkDependencies(plugins: readonly Plugin[]): void {
  const position = new Map<string, number>()
  for (const [i, p] of plugins.entries()) {
    if (p.name === 'core' || position.has(p.name))
      throw new Error(`Plugin "${p.name}" is listed twice, or takes core's name (plugins/index.ts).`)
    position.set(p.name, i)
  }
  for (const [i, p] of plugins.entries())
    for (const needed of p.dependsOn ?? []) {
      const at = position.get(needed)
      if (at === undefined)
        throw new Error(
          `Plugin "${p.name}" depends on plugin "${needed}", which is not in the plugin list (plugins/index.ts).`
        )
      if (at > i)
        throw new Error(
          `Plugin "${p.name}" depends on plugin "${needed}", which comes after it in the plugin list (plugins/index.ts): list "${needed}" first.`
        )
    }
}

/** The OpenAPI descriptions of `plugins`, in their order. */
export function descriptionsOf(plugins: readonly Plugin[]): Describe[] {
  return plugins.flatMap((p) => (p.describe ? [p.describe] : []))
}

/** The GraphQL parts of `plugins`, in their order. */
export function graphqlPartsOf(plugins: readonly Plugin[]): GraphQLPart[] {
  return plugins.flatMap((p) => (p.graphql ? [p.graphql] : []))
}
