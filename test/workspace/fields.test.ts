import t from '../helpers/tap.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { nobody } from '../../plugins/workspace/workspace.context.ts'
import { fieldUi } from '../../plugins/workspace/workspace.fields.ts'

/**
 * The field table's text box carries a module's `pattern` as its `pattern` attribute. The schema's pattern matches
 * anywhere in a value (JSON Schema); the attribute must match the whole value, and browsers compile it with the `v`
 * flag: the attribute, compiled as a browser does, accepts exactly what the schema accepts.
 */
const control = { name: 'code', id: 'f-code', describedBy: '', invalid: false, required: false, people: nobody }
const attributeOf = (pattern: string) => {
  const f = { key: 'code', type: 'text', pattern } as FieldDefinition
  const markup = String(fieldUi.text.input(f, '', control))
  const found = /pattern="([^"]*)"/.exec(markup)
  return found
    ? found[1]
        .replace(/&amp;/g, '&')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&quot;/g, '"')
    : undefined
}
/** How a browser applies an input's pattern: anchored to the whole value, with the `v` flag. */
const asBrowser = (attribute: string) => new RegExp(`^(?:${attribute})$`, 'v')

t.test("a text box's pattern attribute accepts exactly what the module's pattern accepts", async (t) => {
  const cases: Array<[string, string[]]> = [
    ['^[A-Z]{3}-\\d+$', ['ABC-12', 'AB-12', 'ABC-', 'xABC-12', 'ABC-12x', '']],
    ['\\d{4}', ['2026', 'year 2026 ok', '202', 'abc']],
    ['^PO', ['PO-77', 'XPO', 'po']],
    ['kg$', ['12 kg', 'kg ', 'kilogram']]
  ]
  for (const [pattern, values] of cases) {
    const attribute = attributeOf(pattern)
    t.ok(attribute, `${pattern}: the box has a pattern`)
    const schema = new RegExp(pattern, 'u')
    for (const v of values)
      t.equal(asBrowser(attribute!).test(v), schema.test(v), `${pattern} on ${JSON.stringify(v)}: ${schema.test(v)}`)
  }
})

t.test('a text box without a pattern has no pattern attribute', async (t) => {
  const markup = String(fieldUi.text.input({ key: 'code', type: 'text' }, '', control))
  t.notMatch(markup, /pattern=/)
})
