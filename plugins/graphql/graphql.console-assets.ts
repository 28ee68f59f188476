import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Middleware } from 'koa'
import { AssetSet, cssType, jsType, ownAsset, vendorAsset, type SafeHtml } from '../settings/settings.shared.ts'

/** Where the console's scripts and stylesheets are served: GraphiQL and React from the installed packages (no CDN), and the console's own two files. */
export const consoleAssetsPrefix = '/settings/graphql/assets/'

const here = dirname(fileURLToPath(import.meta.url))

/**
 * The only files served under the prefix, by name: the production UMD builds of React and ReactDOM (GraphiQL 3's
 * bundle expects them as globals), GraphiQL's bundle, then the console's script, loaded in that order. Stylesheets:
 * the console's before GraphiQL's (see graphql.console.css).
 */
const assets = new AssetSet(consoleAssetsPrefix, {
  'react.production.min.js': vendorAsset('react', 'umd/react.production.min.js', jsType),
  'react-dom.production.min.js': vendorAsset('react-dom', 'umd/react-dom.production.min.js', jsType),
  'graphiql.min.js': vendorAsset('graphiql', 'graphiql.min.js', jsType),
  'console.js': ownAsset(here, 'graphql.console.browser.js', jsType),
  'console.css': ownAsset(here, 'graphql.console.css', cssType),
  'graphiql.min.css': vendorAsset('graphiql', 'graphiql.min.css', cssType)
})

/** The <link> and <script> tags of the console page; each carries the response's CSP nonce, the only way the page's policy lets them load. */
export function consoleAssetTags(nonce: string): SafeHtml {
  return assets.tags(nonce, {
    stylesheets: ['console.css', 'graphiql.min.css'],
    scripts: ['react.production.min.js', 'react-dom.production.min.js', 'graphiql.min.js', 'console.js']
  })
}

/** `GET /settings/graphql/assets/<name>` (settings/assets.ts). */
export const consoleAssets = (): Middleware => assets.routes()
