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

  // Copy buttons (Connect page): data-copy names the element whose text is copied. The clipboard API needs a
  // secure context (https or localhost); elsewhere the text is selected so Ctrl-C copies it.
  document.addEventListener("click", function (e) {
    var button = e.target && e.target.closest ? e.target.closest("button[data-copy]") : null;
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent;
    var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 2000); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { selectText(source); });
    } else {
      selectText(source);
    }
  });

  function selectText(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
})();
