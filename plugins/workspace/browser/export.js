// The export progress page (GET /exports/:id) works without this file: it reloads itself while the job runs. With it,
// the page asks the public API for the job (GET /api/v1/exports/{id}, the session cookie; a read needs no CSRF token)
// and updates the bar and the words in place, then shows the download link or the reason it failed. Plain ES2017.
;(function () {
  'use strict'

  var box = document.querySelector('[data-export]')
  if (!box || !window.fetch) return
  var id = box.getAttribute('data-export')
  var finalStates = { succeeded: true, failed: true, expired: true }
  if (finalStates[box.getAttribute('data-status')]) return

  var el = function (name) {
    return document.getElementById('export-' + name)
  }
  var count = function (n) {
    return Number(n).toLocaleString('en')
  }
  var plural = function (n, one) {
    return count(n) + ' ' + one + (n === 1 ? '' : 's')
  }
  // Worded as the server words them (workspace.exports.ts progressText, fileSize): keep the two alike.
  var fileSize = function (n) {
    if (n < 1024) return plural(n, 'byte')
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KB'
    return (n / 1024 / 1024).toFixed(1) + ' MB'
  }
  var words = function (job) {
    var done = job.progress.rowsDone
    var total = job.progress.rowsTotal
    var queued = job.queuePosition ? ' (number ' + job.queuePosition + ' in the queue)' : ''
    if (job.status === 'queued') return { state: 'Waiting to start' + queued, rows: '' }
    if (job.status === 'running')
      return {
        state: 'Exporting…',
        rows: total === null ? plural(done, 'row') + ' so far' : count(done) + ' of ' + plural(total, 'row')
      }
    if (job.status === 'succeeded') return { state: 'Done', rows: plural(done, 'row') }
    if (job.status === 'failed') return { state: 'Failed', rows: '' }
    return { state: 'Expired: the file was removed. Start the export again.', rows: '' }
  }
  // Only what changed is written: the state line is a live region, read out when its words change.
  var setText = function (node, text) {
    if (node && node.textContent !== text) node.textContent = text
  }

  var show = function (job) {
    var w = words(job)
    box.setAttribute('data-status', job.status)
    setText(el('state'), w.state)
    setText(el('rows'), w.rows)
    var bar = el('progress')
    if (bar) {
      if (job.status === 'succeeded') {
        bar.max = 1
        bar.value = 1
      } else if (job.progress.rowsTotal) {
        bar.max = job.progress.rowsTotal
        bar.value = job.progress.rowsDone
      } else bar.removeAttribute('value')
      setText(bar, w.rows)
      bar.hidden = job.status === 'failed' || job.status === 'expired'
    }
    if (job.status === 'succeeded') {
      if (job.file) {
        setText(el('link'), 'Download ' + job.file.name)
        setText(el('size'), '(' + fileSize(job.file.size) + ')')
      }
      if (job.expiresAt) setText(el('until'), ', until ' + job.expiresAt.slice(0, 16).replace('T', ' ') + ' UTC')
      el('file').hidden = false
    }
    if (job.status === 'failed') {
      setText(el('problem'), (job.problem && job.problem.detail) || 'The export failed; no file was made.')
      el('problem').hidden = false
    }
  }

  var delay = 1000
  var poll = function () {
    fetch('/api/v1/exports/' + encodeURIComponent(id), {
      credentials: 'same-origin',
      headers: { Accept: 'application/json' }
    })
      .then(function (res) {
        return res.json().then(function (body) {
          return { ok: res.ok, status: res.status, body: body }
        })
      })
      .then(function (r) {
        if (!r.ok) {
          // Signed out, or the export is gone: say so and stop; anything else is tried again.
          if (r.status === 401 || r.status === 403 || r.status === 404) {
            setText(el('problem'), (r.body && r.body.detail) || 'The export can no longer be read. Reload the page.')
            el('problem').hidden = false
            return
          }
          throw new Error('HTTP ' + r.status)
        }
        delay = 1000
        show(r.body)
        if (!finalStates[r.body.status]) setTimeout(poll, delay)
      })
      .catch(function () {
        // The network or the service was away a moment: back off, up to 10 s between tries.
        delay = Math.min(delay * 2, 10000)
        setTimeout(poll, delay)
      })
  }
  setTimeout(poll, 500)
})()
