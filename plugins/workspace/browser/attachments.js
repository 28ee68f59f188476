// Attaching files on a record page (docs/workspace.md, "Attachments"). Plain ES2017, run as is by the browser. The
// page has the form hidden and says that uploading needs JavaScript; this script shows the form and, for each chosen
// file, calls the public API as any client does (the session cookie, and the session's CSRF token in X-CSRF-Token):
// POST /api/v1/attachments for a signed upload URL, PUT the bytes there (XMLHttpRequest, for its upload progress),
// POST the attachment's :complete, then reloads the page, which lists the new files.
// A block, not a function around it: its declarations stay its own (strict mode), and no function is the whole file.
'use strict'
{
  const form = document.getElementById('upload')
  const chooser = document.getElementById('upload-file')
  const camera = document.getElementById('upload-camera')
  const progressBox = form && form.querySelector('[data-progress]')
  const progress = document.getElementById('upload-progress')
  const status = document.getElementById('upload-status')
  const problem = document.getElementById('upload-problem')
  const allowed = form && document.getElementById('upload-hint').textContent
  const csrf = form && form.dataset.csrf
  const maxBytes = form && Number(form.dataset.maxBytes)

  function megabytes(n) {
    return n < 1024 * 1024 ? Math.max(1, Math.round(n / 1024)) + ' KB' : Number((n / 1024 / 1024).toFixed(1)) + ' MB'
  }

  // A refusal of the API (problem+json) in words about the file: the service's own detail, made plain for the limits
  // a person can act on (the type and the size of the file).
  function explain(body, file, status) {
    const errors = (body && body.errors) || []
    for (let i = 0; i < errors.length; i++) {
      const pointer = errors[i].pointer
      if (pointer === '/contentType')
        return (
          '“' +
          file.name +
          '” cannot be attached: files of its type (' +
          (file.type || 'unknown') +
          ') are not accepted. Accepted: ' +
          allowed
        )
      if (pointer === '/size' && file.size > maxBytes)
        return (
          '“' +
          file.name +
          '” is ' +
          megabytes(file.size) +
          ', more than the ' +
          megabytes(maxBytes) +
          ' a file may have.'
        )
      if (pointer === '/size') return '“' + file.name + '” is empty: there is nothing to attach.'
      if (pointer === '/fileName')
        return 'The name “' + file.name + '” cannot be used for a file here: ' + errors[i].detail + '.'
    }
    if (body && body.detail) return body.detail
    return '“' + file.name + '” could not be attached (HTTP ' + status + '). Try again.'
  }

  function Refusal(message) {
    this.message = message
  }

  async function api(url, body, file, key) {
    const headers = { Accept: 'application/json', 'X-CSRF-Token': csrf }
    if (body) headers['Content-Type'] = 'application/json'
    if (key) headers['Idempotency-Key'] = key
    let res
    try {
      res = await fetch(url, {
        method: 'POST',
        credentials: 'same-origin',
        headers: headers,
        body: body ? JSON.stringify(body) : undefined
      })
    } catch (err) {
      throw new Refusal('The service could not be reached; check the connection and try again.')
    }
    const answer = await res.json().catch(function () {
      return undefined
    })
    if (!res.ok) throw new Refusal(explain(answer, file, res.status))
    return answer
  }

  // The PUT of the bytes to the signed URL, with exactly the headers signed; `onProgress(bytesSent)` as they go.
  function put(upload, file, onProgress) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest()
      xhr.open(upload.method || 'PUT', upload.url)
      Object.keys(upload.headers || {}).forEach(function (name) {
        xhr.setRequestHeader(name, upload.headers[name])
      })
      xhr.upload.addEventListener('progress', function (e) {
        onProgress(e.loaded)
      })
      xhr.addEventListener('load', function () {
        if (xhr.status >= 200 && xhr.status < 300) return resolve()
        let body
        try {
          body = JSON.parse(xhr.responseText)
        } catch (err) {
          body = undefined
        }
        reject(
          new Refusal(
            body && body.detail
              ? body.detail
              : 'Storage refused “' + file.name + '” (HTTP ' + xhr.status + '). Try again.'
          )
        )
      })
      xhr.addEventListener('error', function () {
        reject(new Refusal('“' + file.name + '” could not be sent to storage; check the connection and try again.'))
      })
      xhr.send(file)
    })
  }

  async function sha256(file) {
    if (!window.crypto || !window.crypto.subtle || !file.arrayBuffer) return undefined
    const digest = await window.crypto.subtle.digest('SHA-256', await file.arrayBuffer())
    return Array.prototype.map
      .call(new Uint8Array(digest), function (b) {
        return b.toString(16).padStart(2, '0')
      })
      .join('')
  }

  const newKey = function () {
    return window.crypto && window.crypto.randomUUID ? window.crypto.randomUUID() : undefined
  }

  // Progress in words for screen readers: at the start of each file and every quarter, not at every event.
  let spoken = -1
  function show(done, total, file, index, count) {
    const percent = total ? Math.floor((done / total) * 100) : 100
    progress.value = percent
    const quarter = Math.floor(percent / 25)
    if (quarter !== spoken) {
      spoken = quarter
      status.textContent =
        (count > 1 ? 'File ' + (index + 1) + ' of ' + count + ', ' : '') +
        '“' +
        file.name +
        '”: ' +
        percent +
        '% of ' +
        megabytes(total) +
        ' sent.'
    }
  }

  function busy(on) {
    chooser.disabled = on
    camera.disabled = on
    form.setAttribute('aria-busy', on ? 'true' : 'false')
  }

  async function attach(files) {
    if (!files.length) return
    problem.textContent = ''
    busy(true)
    progressBox.hidden = false
    spoken = -1
    const total = files.reduce(function (n, f) {
      return n + f.size
    }, 0)
    let sent = 0
    let attached = 0
    try {
      for (let i = 0; i < files.length; i++) {
        const file = files[i]
        show(sent, total, file, i, files.length)
        const request = {
          recordId: form.dataset.record,
          fileName: file.name,
          contentType: file.type || 'application/octet-stream',
          size: file.size
        }
        // Declared, the checksum is verified before the file becomes part of the record.
        const checksum = file.size <= maxBytes ? await sha256(file) : undefined
        if (checksum) request.sha256 = checksum
        const created = await api('/api/v1/attachments', request, file, newKey())
        await put(created.upload, file, function (loaded) {
          show(sent + Math.min(loaded, file.size), total, file, i, files.length)
        })
        await api(created.complete.url, undefined, file, newKey())
        sent += file.size
        attached++
      }
      progress.value = 100
      status.textContent = (files.length > 1 ? files.length + ' files were' : 'The file was') + ' attached. Reloading…'
      window.location.replace(form.dataset.page + '?done=uploaded')
    } catch (err) {
      if (!(err instanceof Refusal)) throw err
      progressBox.hidden = true
      status.textContent = ''
      problem.textContent =
        err.message +
        (attached
          ? ' ' +
            attached +
            ' file' +
            (attached > 1 ? 's were' : ' was') +
            ' attached before it; reload the page to see them.'
          : '')
      busy(false)
      chooser.value = ''
      camera.value = ''
      chooser.focus()
    }
  }

  function start() {
    form.hidden = false
    // A phone (its main pointer a finger) gets "Take a photo", which opens the rear camera at once.
    if (window.matchMedia && window.matchMedia('(pointer: coarse)').matches) {
      form.querySelector('[data-camera]').hidden = false
    }
    form.addEventListener('submit', function (event) {
      event.preventDefault()
    })
    ;[chooser, camera].forEach(function (input) {
      input.addEventListener('change', function () {
        attach(Array.prototype.slice.call(input.files || []))
      })
    })
  }

  if (form && window.fetch && window.XMLHttpRequest) start()
}
