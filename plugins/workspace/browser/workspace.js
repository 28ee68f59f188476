// The workspace pages work without this file; with it, forms are a little kinder. Plain ES2017, run as is by the
// browser (no build step), loaded with the page's CSP nonce.
;(function () {
  'use strict'

  // A form is sent once: its submit buttons are disabled after the first submit (the server's idempotency key makes a
  // second send harmless anyway; this keeps the person from waiting twice).
  document.addEventListener('submit', function (event) {
    var form = event.target
    if (!(form instanceof HTMLFormElement) || event.defaultPrevented) return
    if (form.method.toLowerCase() === 'get') {
      // A filter form: empty fields are left out of the address, so a shared view's URL says only what it filters.
      Array.prototype.forEach.call(form.elements, function (el) {
        if ((el.tagName === 'INPUT' || el.tagName === 'SELECT') && el.name && el.value === '') el.disabled = true
      })
      return
    }
    if (form.dataset.sent === '1') {
      event.preventDefault()
      return
    }
    form.dataset.sent = '1'
    setTimeout(function () {
      Array.prototype.forEach.call(form.querySelectorAll('button[type=submit],button:not([type])'), function (b) {
        b.disabled = true
        b.setAttribute('aria-busy', 'true')
      })
    }, 0)
  })

  // "Use my location" on a location field: the device's position fills latitude and longitude.
  if ('geolocation' in navigator) {
    Array.prototype.forEach.call(document.querySelectorAll('button[data-locate]'), function (button) {
      button.hidden = false
      button.addEventListener('click', function () {
        var id = button.getAttribute('data-locate')
        button.disabled = true
        navigator.geolocation.getCurrentPosition(
          function (pos) {
            document.getElementById(id + '-lat').value = pos.coords.latitude.toFixed(6)
            document.getElementById(id + '-lon').value = pos.coords.longitude.toFixed(6)
            button.disabled = false
          },
          function () {
            button.disabled = false
          },
          { enableHighAccuracy: true, timeout: 15000 }
        )
      })
    })
  }
})()
