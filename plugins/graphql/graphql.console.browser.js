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
