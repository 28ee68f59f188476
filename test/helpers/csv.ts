/** RFC 4180, strictly: CRLF record ends only, a bare CR or LF outside quotes is an error. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') field += text[i++]
      else if (ch === '"') quoted = false
      else field += ch
    } else if (ch === '"' && field === '') quoted = true
    else if (ch === '"') throw new Error(`stray quote at ${i}`)
    else if (ch === ',') {
      row.push(field)
      field = ''
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      i++
    } else if (ch === '\r' || ch === '\n') throw new Error(`bare line break outside quotes at ${i}`)
    else field += ch
  }
  if (quoted) throw new Error('unterminated quoted field')
  if (field !== '' || row.length) throw new Error('the last record does not end with CRLF')
  return rows
}
