// Small glue for htmx pages: the live-connection indicator follows the htmx ws extension's events.
(function () {
  "use strict";
  function setLive(state) {
    var el = document.getElementById("live-indicator");
    if (el) el.setAttribute("data-state", state);
  }
  document.addEventListener("htmx:wsOpen", function () { setLive("live"); });
  document.addEventListener("htmx:wsClose", function () { setLive(navigator.onLine ? "reconnecting" : "offline"); });
  document.addEventListener("htmx:wsError", function () { setLive("reconnecting"); });
  window.addEventListener("offline", function () { setLive("offline"); });
  window.AWP = window.AWP || {};
  window.AWP.setLive = setLive;
})();
