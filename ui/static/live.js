// The live page: the console's event stream (/ui/events, same origin, the
// session cookie authenticates it) rendered as table rows. Pause keeps the
// stream and holds new events (up to a limit) until resumed.
(function () {
  "use strict";
  var table = document.getElementById("live");
  var body = document.getElementById("live-body");
  var state = document.getElementById("live-state");
  var btn = document.getElementById("live-pause");
  if (!table || !body) return;
  var MAX_ROWS = 500;
  var paused = false;
  var held = [];
  var dropped = 0;

  function cell(tr, text) {
    var td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  // linkCell adds a cell linking to path + id, shown as #id; empty
  // without an id.
  function linkCell(tr, path, id) {
    var td = cell(tr, "");
    if (id) {
      var a = document.createElement("a");
      a.href = path + encodeURIComponent(id);
      a.textContent = "#" + id;
      td.appendChild(a);
    }
  }
  function detail(e) {
    var parts = [];
    if (e.status) parts.push(e.status);
    if (e.op) parts.push(e.op);
    if (e.attempt) parts.push("attempt " + e.attempt);
    if (e.status_code) parts.push("HTTP " + e.status_code);
    if (e.count) parts.push("count " + e.count);
    if (e.duration_ms) parts.push(Math.round(e.duration_ms) + " ms");
    if (e.error) parts.push(e.error);
    if (e.instance) parts.push("on " + e.instance);
    return parts.join(" · ");
  }
  function show(e) {
    var tr = document.createElement("tr");
    tr.className = "ev";
    tr.dataset.type = e.type || "";
    cell(tr, (e.time || "").replace("T", " ").replace(/\.\d+Z$/, "Z"));
    cell(tr, e.type || "");
    linkCell(tr, "/ui/jobs/", e.job_id);
    linkCell(tr, "/ui/runs/", e.run_id);
    cell(tr, detail(e));
    body.insertBefore(tr, body.firstChild);
    while (body.childNodes.length > MAX_ROWS) body.removeChild(body.lastChild);
  }
  function status() {
    if (paused) state.textContent = "paused, " + held.length + " new event(s) held" + (dropped ? ", " + dropped + " dropped" : "");
  }
  function onEvent(m) {
    var e;
    try { e = JSON.parse(m.data); } catch (err) { return; }
    if (paused) {
      if (held.length < MAX_ROWS) held.push(e); else dropped++;
      status();
      return;
    }
    show(e);
  }
  var src = new EventSource(table.dataset.src);
  src.onopen = function () { if (!paused) state.textContent = "live"; table.dataset.state = "open"; };
  src.onerror = function () { state.textContent = "reconnecting…"; table.dataset.state = "error"; };
  src.onmessage = onEvent;
  ["job.changed", "run.changed", "run.attempted", "run.lease_lost", "listener.resync", "listener.down",
   "leader.changed", "dispatcher.claimed", "materializer.materialized", "materializer.skipped",
   "materializer.caught_up", "reaper.reclaimed", "pruner.pruned", "bus.dropped"].forEach(function (t) {
    src.addEventListener(t, onEvent);
  });
  btn.addEventListener("click", function () {
    paused = !paused;
    btn.setAttribute("aria-pressed", paused ? "true" : "false");
    btn.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      held.forEach(show);
      held = [];
      dropped = 0;
      state.textContent = "live";
    } else {
      status();
    }
  });
  window.addEventListener("pagehide", function () { src.close(); });
})();
