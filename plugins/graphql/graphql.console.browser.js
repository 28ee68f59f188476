// Starts GraphiQL on the console page (/settings/graphql); served as a file, so the page's
// CSP needs no inline script. React, ReactDOM and GraphiQL are the globals of their UMD
// builds, loaded before this file. Plain ES2017, run as is by the browser: no build step.
;(function () {
  'use strict'
  var root = document.getElementById('graphiql')
  if (!root) return
  // GraphiQL's dialogs add a <style> (react-remove-scroll) with this nonce when it is set:
  // the page's CSP lets through only styles that carry it.
  window.__webpack_nonce__ = document.currentScript && document.currentScript.nonce

  var endpoint = root.dataset.endpoint
  var csrfToken = root.dataset.csrf

  // The session cookie goes with the request by itself (same origin); X-CSRF-Token shows it
  // comes from a page of this site, which a cross-site page cannot send.
  function fetcher(params, options) {
    var headers = Object.assign({}, options && options.headers, {
      'Content-Type': 'application/json',
      Accept: 'application/graphql-response+json, application/json',
      'X-CSRF-Token': csrfToken
    })
    return fetch(endpoint, {
      method: 'POST',
      credentials: 'same-origin',
      headers: headers,
      body: JSON.stringify(params)
    }).then(function (res) {
      return res.text().then(function (text) {
        // A GraphQL result, or a problem+json refusal (a session that ended, a rate limit): shown as it came.
        try {
          return JSON.parse(text)
        } catch (err) {
          return { errors: [{ message: res.status + ' ' + res.statusText + ': ' + text.slice(0, 500) }] }
        }
      })
    })
  }

  // Editor tabs are kept in this tab's sessionStorage under the signed-in user's key: they
  // survive a reload, but not the tab, and never show one user's queries to another.
  var prefix = 'records:' + root.dataset.storage + ':'
  function ownKeys() {
    var keys = []
    for (var i = 0; i < sessionStorage.length; i++) {
      var key = sessionStorage.key(i)
      if (key && key.indexOf(prefix) === 0) keys.push(key)
    }
    return keys
  }
  var storage = {
    getItem: function (key) {
      return sessionStorage.getItem(prefix + key)
    },
    setItem: function (key, value) {
      sessionStorage.setItem(prefix + key, value)
    },
    removeItem: function (key) {
      sessionStorage.removeItem(prefix + key)
    },
    clear: function () {
      ownKeys().forEach(function (key) {
        sessionStorage.removeItem(key)
      })
    },
    get length() {
      return ownKeys().length
    }
  }

  // GraphiQL's editors (CodeMirror 5) leave two things undone: the text area each one types
  // into has no name, and the pane that scrolls its lines takes no keyboard focus (CodeMirror
  // gives it tabindex -1). Done here for every editor GraphiQL draws, now and later (a new tab,
  // the result of a run): the text area is named after its editor, the pane joins the tab order
  // as a named region, so a keyboard can scroll a long query or result. Only attributes that
  // GraphiQL leaves unset, and only once per element: GraphiQL's own, if it ever sets them, win.
  function editorName(editor) {
    if (editor.closest('.graphiql-query-editor')) return 'Query editor'
    if (editor.closest('.graphiql-response')) return 'Response'
    var tool = editor.closest('.graphiql-editor-tool')
    // The section below the query editor: its first editor the variables, its second the headers.
    if (tool)
      return tool.querySelectorAll('.graphiql-editor')[1] === editor.closest('.graphiql-editor')
        ? 'Headers'
        : 'Variables'
    return 'Editor'
  }
  function nameEditors() {
    root.querySelectorAll('.CodeMirror').forEach(function (editor) {
      var input = editor.querySelector('textarea')
      var pane = editor.querySelector(':scope > .CodeMirror-scroll')
      var inputDone = !input || input.hasAttribute('aria-label')
      var paneDone = !pane || pane.hasAttribute('aria-label')
      if (inputDone && paneDone) return
      var name = editorName(editor)
      if (!inputDone) input.setAttribute('aria-label', name)
      if (!paneDone) {
        pane.setAttribute('tabindex', '0')
        pane.setAttribute('role', 'region')
        pane.setAttribute('aria-label', name + ' (scrollable)')
      }
    })
  }
  new window.MutationObserver(nameEditors).observe(root, { childList: true, subtree: true })

  // In an editor Tab indents (CodeMirror's), so a keyboard could not leave it (WCAG 2.1.2). Escape, then Tab or
  // Shift+Tab, moves the focus on as anywhere else: the Tab is kept from the editor (stopped on its way down, in the
  // capture phase) and left to the browser. Any other key in between makes Tab indent again.
  var leaving = false
  root.addEventListener(
    'keydown',
    function (e) {
      if (!e.target.closest || !e.target.closest('.CodeMirror')) return
      if (e.key === 'Escape') leaving = true
      else if (e.key === 'Tab' && leaving) {
        leaving = false
        e.stopPropagation()
      } else if (e.key !== 'Shift') leaving = false
    },
    true
  )

  root.textContent = ''
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: root.dataset.query,
      storage: storage,
      shouldPersistHeaders: false,
      defaultEditorToolsVisibility: false
    })
  )
})()
