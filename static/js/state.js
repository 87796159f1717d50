// State tab: show the seq while the slider moves; arrow keys step through state changes. (No inline scripts: CSP.)
(function () {
  "use strict";
  // Loaded again whenever htmx swaps the tab in: bind once.
  window.AWP = window.AWP || {};
  if (window.AWP.stateBound) return;
  window.AWP.stateBound = true;
  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "state-seq") {
      var label = document.getElementById("state-seq-label");
      if (label) label.textContent = "seq " + event.target.value;
    }
  });
  // Fold and unfold a branch of the state tree: a real button beside the key's history link (no control in a control).
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest && event.target.closest(".state-toggle");
    if (!toggle) return;
    var open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    toggle.setAttribute("aria-label", (open ? "Fold " : "Unfold ") + toggle.getAttribute("aria-label").replace(/^(Fold|Unfold) /, ""));
    toggle.parentNode.classList.toggle("folded", !open);
  });
  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("state-tab") || /INPUT|SELECT|TEXTAREA/.test(event.target.tagName)) return;
    var id = event.key === "ArrowLeft" ? "state-prev" : event.key === "ArrowRight" ? "state-next" : null;
    var link = id && document.getElementById(id);
    if (link) link.click();
  });
})();
