// Live updates (issue 6): the htmx ws extension carries frames of out-of-band fragments; this file
// - reconnects with ?after=<newest seq the page actually has> (never the seq the page was first rendered with),
// - acknowledges each frame (the server keeps at most two frames in flight per socket),
// - drops appended rows whose id the page already shows (a tab re-render can overlap a frame),
// - drives the #live-indicator: live / reconnecting / offline.
(function () {
  "use strict";
  var FINAL_CODES = { 4400: "bad request", 4401: "signed out", 4403: "no access" };
  var socketWrapper = null;
  var current = null; // the socket we created last: closes of older ones are not ours to handle
  var opened = false;

  function setLive(state, why) {
    var el = document.getElementById("live-indicator");
    if (!el) return;
    el.setAttribute("data-state", state);
    el.setAttribute("title", "live updates: " + state + (why ? " (" + why + ")" : ""));
  }

  function intAttr(el, name) {
    var v = el ? parseInt(el.getAttribute(name), 10) : NaN;
    return isNaN(v) ? null : v;
  }

  // The newest seq the page has rendered: the last frame's mark, or a freshly rendered timeline.
  function renderedSeq() {
    var a = intAttr(document.getElementById("live-mark"), "data-seq");
    var b = intAttr(document.getElementById("timeline-rows"), "data-last-seq");
    if (a === null) return b;
    if (b === null) return a;
    return Math.max(a, b);
  }

  function socketUrl(url) {
    var u = new URL(url, location.href);
    var seq = renderedSeq();
    if (u.searchParams.has("after") && seq !== null) u.searchParams.set("after", String(seq));
    if (opened) u.searchParams.set("resume", "1");
    return u.toString().replace(/^http/, "ws");
  }

  htmx.createWebSocket = function (url) {
    current = new WebSocket(socketUrl(url), []);
    return current;
  };

  // Where a fragment goes: the selector after "how:", else the element with the fragment's own id.
  function oobTarget(oob) {
    var how = oob.getAttribute("hx-swap-oob") || "true";
    var colon = how.indexOf(":");
    if (colon >= 0) return document.querySelector(how.slice(colon + 1));
    return oob.id ? document.getElementById(oob.id) : null;
  }

  // Rows of a changed run (Runs tab): replace the row the page shows; a new top-level run goes on top only
  // where the list says it follows new runs (data-live-new="top": first page, newest first, unfiltered).
  function upsertRows(oob, target) {
    Array.prototype.slice.call(oob.children).forEach(function (row) {
      var existing = row.id ? document.getElementById(row.id) : null;
      if (existing) {
        existing.replaceWith(row);
        htmx.process(row);
      } else if (target.getAttribute("data-live-new") === "top" && row.getAttribute("data-depth") === "0") {
        target.querySelectorAll("tr.empty").forEach(function (empty) { empty.remove(); });
        target.insertBefore(row, target.firstChild);
        htmx.process(row);
      }
    });
  }

  // Frames carry every fragment of the run or experiment; a page keeps those it has a target for and ignores
  // the rest quietly (htmx would log an error for each). Appended rows already on the page are dropped, so a
  // reconnect never duplicates.
  htmx.defineExtension("awp-live", {
    transformResponse: function (text) {
      if (text.indexOf("hx-swap-oob") < 0) return text;
      var tpl = document.createElement("template");
      tpl.innerHTML = text;
      var changed = false;
      Array.prototype.slice.call(tpl.content.children).forEach(function (oob) {
        if (!oob.hasAttribute("hx-swap-oob")) { oob.remove(); changed = true; return; } // nowhere to go
        var target = oobTarget(oob);
        if (!target) { oob.remove(); changed = true; return; }
        if (oob.hasAttribute("data-live-upsert")) { upsertRows(oob, target); oob.remove(); changed = true; return; }
        var how = oob.getAttribute("hx-swap-oob") || "";
        if (!/^(beforeend|afterbegin|beforebegin|afterend)/.test(how)) return;
        oob.querySelectorAll("[id]").forEach(function (row) {
          if (document.getElementById(row.id)) { row.remove(); changed = true; }
        });
      });
      return changed ? tpl.innerHTML : text;
    }
  });

  document.addEventListener("htmx:wsOpen", function (e) {
    socketWrapper = e.detail.socketWrapper;
    opened = true;
    setLive("live");
  });

  document.addEventListener("htmx:wsAfterMessage", function (e) {
    var m = /id="live-mark"[^>]*data-frame="(\d+)"/.exec(e.detail.message);
    if (m && e.detail.socketWrapper) e.detail.socketWrapper.send(JSON.stringify({ ack: parseInt(m[1], 10) }));
  });

  document.addEventListener("htmx:wsClose", function (e) {
    var code = e.detail.event ? e.detail.event.code : 0;
    if (e.detail.event && e.detail.event.target !== current) return;
    if (FINAL_CODES[code]) { setLive("offline", FINAL_CODES[code]); return; }
    setLive(navigator.onLine ? "reconnecting" : "offline");
    // The ws extension retries 1006/1011/1012/1013 itself; a clean close from a restarting server needs us.
    if ([1006, 1011, 1012, 1013].indexOf(code) < 0 && e.detail.socketWrapper) {
      var wrapper = e.detail.socketWrapper;
      setTimeout(function () { if (document.getElementById("live")) wrapper.reconnect(); }, 500 + Math.random() * 1000);
    }
  });

  document.addEventListener("htmx:wsError", function () { setLive("reconnecting"); });
  window.addEventListener("offline", function () { setLive("offline"); });
  window.addEventListener("online", function () { setLive("reconnecting"); });

  // "Load more" in the far-behind notice asks the server for the next capped frames.
  document.addEventListener("click", function (e) {
    var t = e.target;
    if (t && t.closest && t.closest("[data-live-more]") && socketWrapper) {
      socketWrapper.send(JSON.stringify({ more: 1 }));
      var notice = document.getElementById("live-notice");
      if (notice) notice.hidden = true;
    }
  });

  // A re-rendered timeline tab may be ahead of the socket's position: move the socket there.
  document.addEventListener("htmx:afterSettle", function () {
    var mark = document.getElementById("live-mark");
    var rows = intAttr(document.getElementById("timeline-rows"), "data-last-seq");
    var have = intAttr(mark, "data-seq");
    if (mark && rows !== null && have !== null && rows > have && socketWrapper) {
      mark.setAttribute("data-seq", String(rows));
      socketWrapper.reconnect();
    }
  });

  window.AWP = window.AWP || {};
  window.AWP.setLive = setLive;
  window.AWP.renderedSeq = renderedSeq;
})();
