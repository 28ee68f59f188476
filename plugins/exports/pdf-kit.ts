/**
 * What the export table and the record report share: text the standard fonts can print,
 * UTC times, and a "Page n of m" footer whose total is written once, at the end.
 */

// The standard PDF fonts only encode Windows-1252; anything else would print as garbage.
const winAnsiExtras = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ')

/** Text the standard fonts can print: control characters become spaces, other characters outside Windows-1252 "?". */
export function printable(s: string): string {
  let out = ''
  for (const ch of s) {
    const code = ch.codePointAt(0)!
    if (ch === '\n') out += ch
    else if (code < 0x20 || code === 0x7f) out += ' '
    else if (code < 0x7f || (code >= 0xa0 && code <= 0xff) || winAnsiExtras.has(ch)) out += ch
    else out += '?'
  }
  return out
}

const pad2 = (n: number) => String(n).padStart(2, '0')

/** `2026-03-07 09:00` (UTC), with seconds when asked. */
export function utcText(d: Date, seconds = false): string {
  const base = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`
  return seconds ? `${base}:${pad2(d.getUTCSeconds())}` : base
}

const totalName = 'PageTotal'

/**
 * The page total as a form XObject: every page draws it by name, and its one content stream
 * (the number) is written when the document ends. Pages are flushed as they fill, so memory
 * stays flat however many pages come, where pdfkit's `bufferPages` would hold every page
 * until the end to write "of m" into each.
 */
export function pageTotal(doc: PDFKit.PDFDocument, font: { size: number; colour: [number, number, number] }) {
  doc.font('Helvetica')
  // The current font is pdfkit's own state, absent from @types/pdfkit: its `ref()` is the font's PDF object.
  const fontRef = (doc as PDFKit.PDFDocument & { _font: { ref(): PDFKit.PDFKitReference } })._font.ref()
  const width = 60
  const height = font.size * 1.4
  const xobject = doc.ref({
    Type: 'XObject',
    Subtype: 'Form',
    BBox: [0, 0, width, height],
    Resources: { Font: { FT: fontRef } }
  })
  let ended = false
  return {
    /** Draws the total with its left edge at `x` and the text's top at `y` (pdfkit's top-left coordinates). */
    draw(x: number, y: number) {
      doc.page.xobjects[totalName] = xobject
      // pdfkit flips the page's y axis; flip the form back so its text stands upright.
      doc.save()
      doc.transform(1, 0, 0, -1, x, y + height)
      doc.addContent(`/${totalName} Do`)
      doc.restore()
    },
    /** Writes the total; call once, before `doc.end()`. */
    finish(total: number) {
      if (ended) return
      ended = true
      const [r, g, b] = font.colour
      // pdfkit puts a baseline at `y` + the ascender (0.718 em in Helvetica); the form's y axis points up from its bottom.
      xobject.end(
        `BT /FT ${font.size} Tf ${r} ${g} ${b} rg 0 ${(height - font.size * 0.718).toFixed(2)} Td (${total}) Tj ET`
      )
    }
  }
}

/** A hex colour as PDF's 0–1 RGB triple. */
export function rgb(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16)
  return [((n >> 16) & 255) / 255, ((n >> 8) & 255) / 255, (n & 255) / 255].map((v) => Number(v.toFixed(3))) as [
    number,
    number,
    number
  ]
}
