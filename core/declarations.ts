import type { Application as FeathersKoa } from '@feathersjs/koa'
import type { CredentialStore } from './auth/credentials.ts'
import type { SessionStore } from './auth/sessions.ts'
import type { UserDirectory } from './auth/users.ts'
import type { Limiter } from './limits/limiter.ts'
import type { StorageDriver } from './storage/driver.ts'
import type { AppConfig } from './config.ts'
import type { Database } from './db/index.ts'
import type { ModuleRegistry } from './modules/registry.ts'
import type { CursorCodec } from './pagination/cursor.ts'
import type { Describe } from './openapi/builder.ts'
import type { GraphQLPart } from './graphql/schema-part.ts'
import type { OpenApiDocuments } from './openapi/document.ts'
import type { TenantDirectory } from './tenancy/tenants.ts'
import type { Metrics } from './telemetry/metrics.ts'
import type { Shutdown } from './shutdown.ts'
import type { ReadinessCheck } from './http/health.ts'
import type { BackgroundTask } from './plugin.ts'

/** What every plugin reads from the app: built once at start-up. */
export interface Platform {
  config: AppConfig
  db: Database
  registry: ModuleRegistry
  tenants: TenantDirectory
  credentials: CredentialStore
  users: UserDirectory
  sessions: SessionStore
  /** Rate-limit windows and concurrency slots (Redis when configured); absent in the CLI. */
  limiter?: Limiter
  cursors: CursorCodec
  /** Where attachment bytes live (local disk or S3). */
  storage: StorageDriver
  /** The service's public base URL (known for certain once it listens). */
  urls: { public: string }
  /** Puts a job on the scheduler, to run now or after `delayMs` (every instance may enqueue; only instances with jobs enabled run them). */
  enqueue(name: string, data: Record<string, unknown>, options?: { delayMs?: number }): Promise<void>
  /** The limits that apply to a tenant: the defaults with its enterprise overrides. */
  limitsFor: (tenantId: string | undefined) => AppConfig['limits']
  /** Prometheus instruments of this platform (core/telemetry/metrics.ts), served on their own listener. */
  metrics: Metrics
  /** Whether this instance drains (SIGTERM): long work (a bulk call) reads `shutdown.signal` and stops taking more. */
  shutdown: Shutdown
}

export interface Settings {
  platform: Platform
  /** Base of problem `type` URIs, known once the server listens. */
  errorsUrl: string
  /** Every plugin's OpenAPI description, in plugin order (core/plugin.ts); api-docs builds the document from them. */
  describes: Describe[]
  /** Every plugin's part of the GraphQL schema, in plugin order (core/plugin.ts); plugins/graphql builds each caller's schema from them. */
  graphqlParts: GraphQLPart[]
  /** The OpenAPI documents (plugins/api-docs), for the contract checker of the tests. */
  openapi?: OpenApiDocuments
  /** The plugins' background work (Plugin.background), once the server listens. */
  background?: BackgroundTask[]
  /** What `/readyz` checks, by name (core/http/health.ts): the database and Redis from the start, the jobs once they run. */
  readiness: Map<string, ReadinessCheck>
}

/**
 * The services by path, so that `app.service(path)` is typed: each plugin adds its own by
 * declaration merging (`declare module '…/core/declarations.ts' { interface ServiceTypes
 * { [path]: Service } }`), and core names none of them.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ServiceTypes {}

export type App = FeathersKoa<ServiceTypes, Settings>
