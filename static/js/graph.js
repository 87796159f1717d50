// The run as a graph (issue 16): reads the node list of templates/experiments/_run_graph.html, lays it out
// with dagre (static/vendor/dagre.min.js) and draws it as SVG. Agent nodes are links: choosing one filters
// the Timeline to that agent (an htmx swap of #run-tab when the Timeline is there, a page load otherwise).
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function draw(section) {
    var canvas = section.querySelector(".graph-canvas");
    var items = section.querySelectorAll("li[data-node]");
    if (!canvas || !items.length || typeof dagre === "undefined") return;
    var g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: canvas.getAttribute("data-rankdir") || "TB", nodesep: 18, ranksep: 36, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(function () { return {}; });
    var info = {};
    items.forEach(function (li) {
      var id = li.getAttribute("data-node");
      var label = li.getAttribute("data-label") || id;
      var meta = (li.getAttribute("data-meta") || "").replace(/^ · /, "");
      info[id] = { label: label, meta: meta, status: li.getAttribute("data-status") || "", kind: li.getAttribute("data-kind") || "", href: li.getAttribute("data-href") || "" };
      var chars = Math.max(label.length, meta.length);
      g.setNode(id, { width: Math.min(320, Math.max(90, chars * 7 + 20)), height: meta ? 40 : 26 });
    });
    items.forEach(function (li) {
      var id = li.getAttribute("data-node");
      var parent = li.getAttribute("data-parent");
      if (parent && info[parent]) g.setEdge(parent, id);
      (li.getAttribute("data-deps") || "").split(" ").forEach(function (dep) { if (dep && info[dep]) g.setEdge(dep, id); });
    });
    dagre.layout(g);
    var size = g.graph();
    var svg = el("svg", { "class": "graph-svg", width: Math.ceil(size.width), height: Math.ceil(size.height), viewBox: "0 0 " + Math.ceil(size.width) + " " + Math.ceil(size.height), role: "group", "aria-label": "Run graph, " + items.length + " nodes" });
    var defs = el("defs", {}, svg);
    var marker = el("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", "class": "graph-arrow" }, marker);
    g.edges().forEach(function (e) {
      var pts = g.edge(e).points.map(function (p) { return p.x.toFixed(1) + "," + p.y.toFixed(1); }).join(" ");
      el("polyline", { points: pts, "class": "graph-edge", "marker-end": "url(#graph-arrow)" }, svg);
    });
    g.nodes().forEach(function (id) {
      var n = g.node(id);
      var d = info[id];
      var holder = svg;
      if (d.href) {
        // The link is named by the text it shows (WCAG 2.5.3); what a click does is its description.
        holder = el("a", { href: d.href, "class": "graph-link", "data-node": id, "aria-description": "filters the Timeline to this agent" }, svg);
      }
      var group = el("g", { "class": "graph-node node-" + d.kind + " status-" + (d.status || "none").replace(/\s+/g, "-"), "data-node": id, transform: "translate(" + (n.x - n.width / 2).toFixed(1) + "," + (n.y - n.height / 2).toFixed(1) + ")" }, holder);
      el("rect", { width: n.width, height: n.height, rx: 6 }, group);
      var title = el("title", {}, group);
      title.textContent = d.label + (d.meta ? " — " + d.meta : "");
      var t = el("text", { x: 8, y: d.meta ? 16 : 17 }, group);
      t.textContent = d.label.length > 44 ? d.label.slice(0, 43) + "…" : d.label;
      if (d.meta) {
        var m = el("text", { x: 8, y: 32, "class": "graph-meta" }, group);
        m.textContent = d.meta;
      }
    });
    canvas.replaceChildren(svg);
  }

  // Draw every graph whose canvas is still empty (a page load, or a section a websocket frame replaced).
  function drawAll() {
    document.querySelectorAll(".run-graph").forEach(function (section) {
      var canvas = section.querySelector(".graph-canvas");
      if (canvas && !canvas.querySelector("svg")) draw(section);
    });
  }

  // A node choice filters the Timeline in place when it is on the page (keeps the live socket).
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest("a.graph-link, .graph-list a");
    if (!link || e.ctrlKey || e.metaKey || e.shiftKey || typeof htmx === "undefined") return;
    var tab = document.getElementById("run-tab");
    if (!tab || tab.getAttribute("data-run-tab") !== "timeline") return;
    e.preventDefault();
    var url = link.getAttribute("href");
    htmx.ajax("GET", url, { target: "#run-tab", headers: { "HX-Target": "run-tab" } }).then(function () {
      history.pushState({}, "", url);
    });
  });

  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:wsAfterMessage", drawAll);
  document.addEventListener("htmx:afterSettle", drawAll);
  if (document.readyState !== "loading") drawAll();
})();
