import type { ModuleDefinition } from '@qehs-records/module-sdk'

// The definition's types are the authoring SDK's (packages/module-sdk): one source for authors and the platform.
export * from '@qehs-records/module-sdk'

/** A module as held by the registry: validated, frozen, with the package it came from. */
export interface LoadedModule extends ModuleDefinition {
  packageName: string
  packagePath: string
}
