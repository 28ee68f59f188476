import type { ModuleDefinition } from './types.ts'

export type * from './types.ts'

/**
 * Declares a module. It only types and returns the definition: nothing runs at
 * import time; the registry validates the definition when it loads the package.
 */
export function defineModule<const T extends ModuleDefinition>(definition: T): T {
  return definition
}
