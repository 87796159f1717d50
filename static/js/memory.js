// Memory tab: submit filter selects on change, and pick sensible tiers when the search mode changes.
(function () {
  "use strict";
  window.AWP = window.AWP || {};
  if (window.AWP.memoryReady) { return; }
  window.AWP.memoryReady = true;
  var MODE_TIERS = { keyword: ["long_term", "working"], semantic: ["semantic"], date_range: ["working"], agent_filter: ["episodic"] };
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches("select.autosubmit") && target.form) {
      target.form.requestSubmit();
    }
    if (target.matches("#memory-search-form select[name=mode]")) {
      var wanted = MODE_TIERS[target.value] || [];
      target.form.querySelectorAll("input[name=tiers]").forEach(function (box) {
        box.checked = wanted.indexOf(box.value) !== -1;
      });
    }
  });
})();
