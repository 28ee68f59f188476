import { can, hiddenFields } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { nonceCsp, setHtmlSecurityHeaders } from '../../core/http/security-headers.ts'
import { summaryColumns } from '../../core/modules/derive/columns.ts'
import type { FieldDefinition, FieldType } from '../../core/modules/types.ts'
import {
  frameFor,
  html,
  layout,
  pageRouter,
  sendPage,
  seeOther,
  sessionOf,
  signInLocation,
  type PageRequest,
  type PageRoute
} from '../settings/settings.shared.ts'
import { consoleAssets, consoleAssetTags } from './graphql.console-assets.ts'
import { moduleFieldNames } from './graphql.names.ts'
import { schemaKey } from './graphql.schema.ts'
import { graphqlPath, sdlPath } from './graphql.shared.ts'

export const consolePath = '/settings/graphql'

/** Payload field types whose GraphQL output is a leaf (a scalar, an enum or a list of them), selected without a sub-selection. */
const leafTypes: ReadonlySet<FieldType> = new Set<FieldType>([
  'text',
  'longText',
  'number',
  'integer',
  'boolean',
  'date',
  'datetime',
  'singleChoice',
  'multipleChoice'
])

const comment = (text: string) => `# ${text.replace(/\s+/g, ' ')}`

/**
 * The query the console opens with: the first page of records of the tenant's first module
 * whose records the caller may read, with number, state and up to four payload fields it
 * may read (the module's summary columns first). First in the operator's list of the
 * tenant's modules (config `tenants.<id>.modules`, e.g. incident before corrective-action),
 * then by key, the schema's order. Root field names come from the same module list as the
 * caller's schema (graphql.names.ts), so they are the schema's. Without such a module: who am I.
 */
export function exampleQuery(platform: Platform, principal: Principal): string {
  const { modules } = schemaKey(platform, principal)
  const listed = platform.config.tenants[principal.tenantId]?.modules ?? []
  const rank = (key: string) => (listed.includes(key) ? listed.indexOf(key) : listed.length)
  // A stable sort: modules the list does not name keep the schema's key order after the others.
  const m = [...modules]
    .sort((a, b) => rank(a.definition.key) - rank(b.definition.key))
    .find((x) => can(principal, x, 'read'))
  if (!m) {
    return `${comment('None of your roles may read the records of a module:')}
${comment('this asks who you are and what you may do.')}
query Me {
  me {
    tenantName
    actor {
      name
    }
    roles
    modules
  }
}
`
  }
  const d = m.definition
  const { many } = moduleFieldNames(modules.map((x) => x.definition.key)).get(d.key)!
  const hidden = hiddenFields(principal, m)
  const byKey = new Map(d.fields.map((f) => [f.key, f]))
  const readable = (f: FieldDefinition | undefined): f is FieldDefinition =>
    !!f && !hidden.has(f.key) && leafTypes.has(f.type)
  const summary = summaryColumns(m)
    .map((k) => byKey.get(k))
    .filter(readable)
  const fields = (summary.length ? summary : d.fields.filter(readable)).slice(0, 4)
  const payload = fields.length
    ? `\n        payload {\n${fields.map((f) => `          ${f.key}`).join('\n')}\n        }`
    : ''
  return `${comment(`Your first ten ${d.title} records.`)}
${comment('Run: ▶ or Ctrl-Enter.')}
${comment('Docs (book icon): all you may query.')}
query ${many[0].toUpperCase()}${many.slice(1)} {
  ${many}(first: 10) {
    edges {
      node {
        id
        number
        state${payload}
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
`
}

/**
 * The pages' strict policy (a nonce for every script and stylesheet, nothing inline
 * without it), plus what GraphiQL needs: its fetcher calls /api/graphql (connect-src), its
 * fonts and a few icons are data: URLs in its stylesheet.
 */
export function consoleCsp(nonce: string): string {
  const directives = new Map(
    nonceCsp(nonce)
      .split('; ')
      .map((d) => [d.split(' ')[0], d])
  )
  directives.set('img-src', "img-src 'self' data:")
  directives.set('font-src', 'font-src data:')
  directives.set('connect-src', "connect-src 'self'")
  return [...directives.values()].join('; ')
}

async function showConsole(r: PageRequest) {
  const session = sessionOf(r)
  if (!session) return seeOther(r, signInLocation(consolePath))
  setHtmlSecurityHeaders(r.ctx, consoleCsp(r.nonce))
  const p = session.principal
  sendPage(
    r,
    200,
    layout({
      ...frameFor(r, session),
      title: 'GraphQL console',
      head: consoleAssetTags(r.nonce),
      main: html`<main class="console">
<h1>GraphQL console</h1>
<p class="intro hint">Queries and mutations run as you, with your roles: the schema holds your organisation's modules and the fields you may read, and a mutation changes records as REST would. Programs send the same requests to <code>/${graphqlPath}</code> with a token (<a href="/settings/api-keys">API keys and tokens</a>); the schema as SDL: <a href="/${sdlPath}">/${sdlPath}</a>. In an editor, Tab indents: press Esc, then Tab, to move on.</p>
<div id="graphiql" data-endpoint="/${graphqlPath}" data-csrf="${session.csrfToken}" data-storage="${p.tenantId}:${p.userId ?? p.credentialId}" data-query="${exampleQuery(r.platform, p)}"><p class="hint">Loading the console…</p><noscript><p class="hint">The console needs JavaScript.</p></noscript></div>
</main>`
    })
  )
}

export const consoleRoutes: PageRoute[] = [{ method: 'GET', path: /^\/settings\/graphql$/, handler: showConsole }]

/** The console page (with a link in the settings menu) and its files. */
export function graphqlConsole(app: App) {
  app.use(consoleAssets())
  app.use(pageRouter(app, { routes: consoleRoutes, nav: [{ href: consolePath, label: 'GraphQL' }] }))
}
