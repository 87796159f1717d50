// Small glue for htmx pages. The live-connection indicator (#live-indicator) lives in static/js/live.js.
(function () {
  "use strict";
  window.AWP = window.AWP || {};
})();
