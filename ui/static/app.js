// Chronos console: the few behaviours htmx does not cover. No inline
// script anywhere (the content security policy forbids it); every string
// from the server is set with textContent, never parsed as markup.
(function () {
  "use strict";
  function notice(text, bad) {
    var n = document.getElementById("notice");
    if (!n) return;
    n.textContent = text;
    n.classList.toggle("bad", !!bad);
    n.hidden = false;
  }
  document.addEventListener("chronos:notice", function (e) {
    if (e.detail && typeof e.detail.value === "string") notice(e.detail.value, false);
  });
  document.body.addEventListener("htmx:responseError", function (e) {
    var x = e.detail.xhr;
    var msg = x.status === 403 ? "Forbidden: your API key may not do this." : "The request failed (HTTP " + x.status + ").";
    notice(msg, true);
  });
})();
