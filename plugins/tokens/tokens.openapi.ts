import { operation, pathParam, queryParam, type DocContext, type Fragment } from '../../core/openapi/builder.ts'
import { tokenDataSchema, tokenSchema } from './tokens.schema.ts'

const tag = 'Identity'

export function describeTokens(ctx: DocContext): Fragment {
  const token = ctx.ref(tokenSchema)
  const created = ctx.ref(
    {
      ...JSON.parse(JSON.stringify(tokenSchema)),
      title: 'Created token',
      required: [...tokenSchema.required!, 'token'],
      description: 'The new token, with the full secret in `token`: shown in this response only.'
    },
    'CreatedToken'
  )
  const noStore = ['Cache-Control']
  // The example's scopes name one of the tenant's modules.
  const moduleKey = ctx.modules[0]?.definition.key ?? 'incident'
  const id = pathParam('id', 'The token id (UUID).', { type: 'string', format: 'uuid' })
  // JSON Schema cannot compare a date-time with the clock: the description says what the service holds it to.
  const data = JSON.parse(JSON.stringify(tokenDataSchema))
  data.properties.expiresAt.description = `${data.properties.expiresAt.description}. Must be in the future: a time now or past is 400 \`field.invalid\` (code \`future\`).`
  return {
    tags: [],
    paths: {
      '/api/v1/tokens': {
        get: operation({
          operationId: 'listTokens',
          tag,
          summary: 'List tokens',
          description:
            'Your own tokens; an admin (or a tenant API key) with `all=true` every token of the tenant. Secrets are never listed, only their prefix.',
          scope: 'tokens:write',
          parameters: [
            queryParam('all', 'Admins: every token of the tenant.', { type: 'boolean' }),
            queryParam('includeRevoked', 'Also list revoked tokens.', { type: 'boolean' })
          ],
          responses: {
            200: {
              description: 'The tokens.',
              schema: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: token } } },
              headers: noStore
            }
          }
        }),
        post: operation({
          operationId: 'createToken',
          tag,
          summary: 'Create a token',
          description:
            'A personal access token (acts as you, optionally narrowed by scopes), a service-account token (scopes required; optional roles) or a tenant API key. ' +
            "A created token never has more than its creator nor outlives it: a service account's roles are within yours (left out: yours), scopes within yours and usable by your roles (no `scim`, `tokens:write` or `webhooks:write` without `admin`; a module-bound scope only on a module a role of yours grants its action; left out: yours), `expiresAt` no later than your token's (left out: that expiry; a browser session does not bound it), and a tenant API key comes only from a credential acting as the whole tenant (an unscoped API key, the CLI, or a person holding every role of the tenant). " +
            'Refusals are 403 `token.escalation` with `escalation` `type` (`heldRoles`, `heldScopes`), `roles` (`notHeld`, `heldRoles`) or `expiresAt` (`creatorExpiresAt`), or 403 `scope.escalation` (`notHeld`, `heldScopes`); `permission.denied` without `admin`, `token.user_required` for a personal token without a user. ' +
            'The secret is in this response only (`Cache-Control: no-store`); an `Idempotency-Key` is refused (400), since a replay could not return the secret.',
          scope: 'tokens:write',
          body: {
            schema: ctx.ref(data, tokenDataSchema.title),
            example: {
              type: 'service-account',
              name: 'ERP sync',
              scopes: [`records:read:${moduleKey}`, `bulk:write:${moduleKey}`]
            }
          },
          responses: { 201: { description: 'The token, with its secret.', schema: created, headers: noStore } },
          problems: [413, 415]
        })
      },
      '/api/v1/tokens/{id}': {
        parameters: [id],
        get: operation({
          operationId: 'getToken',
          tag,
          summary: 'Get a token',
          scope: 'tokens:write',
          responses: { 200: { description: 'The token (without its secret).', schema: token, headers: noStore } },
          problems: [404]
        }),
        delete: operation({
          operationId: 'revokeToken',
          tag,
          summary: 'Revoke a token',
          description: 'The token answers 401 from its next call, on every instance.',
          scope: 'tokens:write',
          responses: { 200: { description: 'The revoked token.', schema: token, headers: noStore } },
          problems: [404]
        })
      }
    }
  }
}
