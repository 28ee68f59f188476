import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { pageRouter, type PageRoute } from '../settings/settings.shared.ts'
import { workspaceAssets } from './workspace.assets.ts'
import { downloadAttachment } from './workspace.attachments.ts'
import {
  create,
  edit,
  remove,
  showCreate,
  showDelete,
  showEdit,
  showTransition,
  transition
} from './workspace.forms.ts'
import { downloadExport, showExport, startExport } from './workspace.exports.ts'
import { showHome, showList } from './workspace.lists.ts'
import { recordReport, showRecord } from './workspace.record.ts'

const mod = '([a-z][a-z0-9-]*)'
const id = '([0-9a-fA-F-]{36})'

/** The pages of the records workspace (docs/workspace.md). */
const routes: PageRoute[] = [
  { method: 'GET', path: /^\/records$/, handler: showHome },
  { method: 'GET', path: new RegExp(`^/records/${mod}$`), keys: ['module'], handler: showList },
  { method: 'POST', path: new RegExp(`^/records/${mod}/export$`), keys: ['module'], handler: startExport },
  { method: 'GET', path: new RegExp(`^/exports/${id}$`), keys: ['id'], handler: showExport },
  { method: 'GET', path: new RegExp(`^/exports/${id}/download$`), keys: ['id'], handler: downloadExport },
  { method: 'GET', path: new RegExp(`^/records/${mod}/new$`), keys: ['module'], handler: showCreate },
  { method: 'POST', path: new RegExp(`^/records/${mod}/new$`), keys: ['module'], handler: create },
  { method: 'GET', path: new RegExp(`^/records/${mod}/${id}$`), keys: ['module', 'id'], handler: showRecord },
  {
    method: 'GET',
    path: new RegExp(`^/records/${mod}/${id}/report\\.pdf$`),
    keys: ['module', 'id'],
    handler: recordReport
  },
  {
    method: 'GET',
    path: new RegExp(`^/records/${mod}/${id}/attachments/${id}$`),
    keys: ['module', 'id', 'attachment'],
    handler: downloadAttachment
  },
  { method: 'GET', path: new RegExp(`^/records/${mod}/${id}/edit$`), keys: ['module', 'id'], handler: showEdit },
  { method: 'POST', path: new RegExp(`^/records/${mod}/${id}/edit$`), keys: ['module', 'id'], handler: edit },
  {
    method: 'GET',
    path: new RegExp(`^/records/${mod}/${id}/transition/${mod}$`),
    keys: ['module', 'id', 'key'],
    handler: showTransition
  },
  {
    method: 'POST',
    path: new RegExp(`^/records/${mod}/${id}/transition/${mod}$`),
    keys: ['module', 'id', 'key'],
    handler: transition
  },
  { method: 'GET', path: new RegExp(`^/records/${mod}/${id}/delete$`), keys: ['module', 'id'], handler: showDelete },
  { method: 'POST', path: new RegExp(`^/records/${mod}/${id}/delete$`), keys: ['module', 'id'], handler: remove }
]

/**
 * The records workspace: pages for the people who do the safety work, derived at run time from the tenant's module
 * definitions (a module installed from a package appears with its fields, filters and transitions, with no UI code).
 * Every page calls the records service as REST and GraphQL do, with the signed-in person's principal.
 */
export function workspace(app: App) {
  app.use(workspaceAssets())
  app.use(
    pageRouter(app, {
      routes,
      nav: [{ href: '/records', label: 'Home', first: true, section: true }],
      home: '/records'
    })
  )
}

export const workspacePlugin: Plugin = {
  name: 'workspace',
  dependsOn: ['settings', 'records', 'record-report', 'attachments', 'exports'],
  configure: workspace
}
