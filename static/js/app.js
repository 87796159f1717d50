// Small glue for htmx pages. The live-connection indicator (#live-indicator) lives in static/js/live.js.
(function () {
  "use strict";
  window.AWP = window.AWP || {};

  // Timeline rows carry their payload as compact JSON; indent it the first time its row is opened
  // (the server no longer pretty-prints every payload up front). `toggle` does not bubble: capture it.
  document.addEventListener("toggle", function (e) {
    var details = e.target;
    if (!details.open || !details.classList || !details.classList.contains("payload-toggle")) return;
    var pre = details.querySelector("pre[data-json]");
    if (!pre) return;
    pre.removeAttribute("data-json");
    try { pre.textContent = JSON.stringify(JSON.parse(pre.textContent), null, 2); } catch (err) { /* cut at 20k chars: shown as is */ }
  }, true);
})();
