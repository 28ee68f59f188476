import { operation, type DocContext, type Fragment } from '../../core/openapi/builder.ts'

const tag = 'Identity'

export function describeMe(ctx: DocContext): Fragment {
  const list = { type: 'array', items: { type: 'string' } }
  const me = ctx.ref(
    {
      type: 'object',
      title: 'Caller',
      required: ['tenantId', 'tenantName', 'credential', 'actor', 'userId', 'roles', 'scopes', 'modules', 'rateLimit'],
      properties: {
        tenantId: { type: 'string' },
        tenantName: { type: 'string' },
        credential: {
          type: 'object',
          required: ['id', 'type'],
          properties: {
            id: { type: 'string' },
            type: { type: 'string', enum: ['api-key', 'personal', 'service-account', 'session'] }
          }
        },
        actor: { $ref: '#/components/schemas/Actor' },
        userId: { type: ['string', 'null'] },
        roles: {
          anyOf: [{ const: 'all' }, list],
          description: '`all` for a tenant API key (and a service account without roles).'
        },
        scopes: {
          anyOf: [{ const: 'all' }, list],
          description: '`all` when the credential is not narrowed by scopes.'
        },
        modules: {
          type: 'object',
          description: "Module key → the actions the credential's roles grant in it.",
          additionalProperties: list
        },
        rateLimit: {
          type: 'object',
          required: ['requestsPerMinute'],
          properties: { requestsPerMinute: { type: 'integer' } }
        },
        csrfToken: { type: 'string', description: 'Browser sessions only: send it as `X-CSRF-Token` on writes.' }
      }
    },
    'Me'
  )
  return {
    tags: [{ name: tag, description: 'Who the caller is, and the tokens of the tenant.' }],
    paths: {
      '/api/v1/me': {
        get: operation({
          operationId: 'getMe',
          tag,
          summary: 'Describe the caller',
          description:
            'The credential, its actor, roles, scopes and the module actions it may perform. Any valid credential may ask.',
          scope: '',
          responses: { 200: { description: 'The caller.', schema: me } }
        })
      }
    }
  }
}
