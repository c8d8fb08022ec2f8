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
  // A checkbox with data-select-all="<form id>" selects or clears every
  // row of that form.
  document.addEventListener("change", function (e) {
    var all = e.target;
    if (!all.matches || !all.matches("input[data-select-all]")) return;
    var form = document.getElementById(all.dataset.selectAll);
    if (!form) return;
    form.querySelectorAll('input[type=checkbox][name=id]').forEach(function (c) { c.checked = all.checked; });
  });
  // A button with data-confirm asks before it submits.
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button[data-confirm]") : null;
    if (b && !window.confirm(b.dataset.confirm)) e.preventDefault();
  });
  document.body.addEventListener("htmx:responseError", function (e) {
    var x = e.detail.xhr;
    var msg = x.status === 403 ? "Forbidden: your API key may not do this." : "The request failed (HTTP " + x.status + ").";
    notice(msg, true);
  });
})();
