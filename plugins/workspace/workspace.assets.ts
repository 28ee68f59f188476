import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Middleware } from 'koa'
import { AssetSet, jsType, ownAsset, type SafeHtml } from '../settings/settings.shared.ts'

/** Where the workspace's browser scripts are served (plain ES2017 files in browser/, no build step). */
export const workspaceAssetsPrefix = '/records/assets/'

const dir = join(dirname(fileURLToPath(import.meta.url)), 'browser')

/** Every script a workspace page may load, by name. `workspace.js` is on every page. */
const assets = new AssetSet(workspaceAssetsPrefix, {
  'workspace.js': ownAsset(dir, 'workspace.js', jsType),
  'export.js': ownAsset(dir, 'export.js', jsType),
  'attachments.js': ownAsset(dir, 'attachments.js', jsType)
})

/** The tags of `workspace.js` and the page's own scripts, with the response's nonce. */
export function assetTags(nonce: string, scripts: readonly string[]): SafeHtml {
  return assets.tags(nonce, { scripts: ['workspace.js', ...scripts] })
}

export const workspaceAssets = (): Middleware => assets.routes()
