import { Type, type Static } from '@feathersjs/typebox'
import { compileData, compileQuery } from '../../core/validation.ts'

export const tokenTypes = ['api-key', 'personal', 'service-account'] as const
export type TokenType = (typeof tokenTypes)[number]

export const tokenSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    type: Type.Union(tokenTypes.map((t) => Type.Literal(t))),
    name: Type.String(),
    prefix: Type.String({
      description: 'The first characters of the token, to recognise it; the rest is never shown again'
    }),
    userId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'The issuing user of a personal token'
    }),
    scopes: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'null: not narrowed by scopes (roles alone decide)'
    }),
    roles: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'Service accounts: the roles it acts with; null: the tenant within its scopes'
    }),
    state: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
    createdAt: Type.String({ format: 'date-time' }),
    createdBy: Type.Unknown(),
    lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    token: Type.Optional(Type.String({ description: 'The full token: in the creation response only, never again' }))
  },
  { title: 'Token', additionalProperties: false }
)
export type TokenOut = Static<typeof tokenSchema>

export const tokenDataSchema = Type.Object(
  {
    type: Type.Union(
      tokenTypes.map((t) => Type.Literal(t)),
      {
        description: 'personal: acts as you; service-account: an integration with explicit scopes; api-key: the tenant'
      }
    ),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        uniqueItems: true,
        maxItems: 100,
        description: 'Within your own, and only scopes your roles can use; left out: yours'
      })
    ),
    roles: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        uniqueItems: true,
        maxItems: 100,
        description:
          'Service accounts: roles you hold; left out: yours (none, the tenant within the scopes, only if you act with every role)'
      })
    ),
    expiresAt: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description:
          "No later than your own token's expiry; left out: that expiry (never if yours has none); null: never"
      })
    )
  },
  { title: 'TokenCreate', additionalProperties: false }
)
export type TokenData = Static<typeof tokenDataSchema>
export const tokenDataValidator = compileData(tokenDataSchema)

export const tokenQuerySchema = Type.Object(
  {
    all: Type.Optional(Type.Boolean({ description: 'Admins: every token of the tenant, not only your own' })),
    includeRevoked: Type.Optional(Type.Boolean())
  },
  { title: 'TokenQuery', additionalProperties: false }
)
export type TokenQuery = Static<typeof tokenQuerySchema>
export const tokenQueryValidator = compileQuery(tokenQuerySchema)
