// Review queue keyboard: j/k move, Enter opens the evidence, a approve, e edit-and-approve, r reject, x select.
(function () {
  "use strict";
  if (window.AWPReview) return; // htmx re-runs this script on every tab swap; one listener is enough
  var state = { index: 0 };

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#review-queue .proposal-row")); }
  function current() { var all = rows(); return all.length ? all[Math.min(state.index, all.length - 1)] : null; }

  function select(index, open) {
    var all = rows();
    if (!all.length) return;
    state.index = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) {
      row.classList.toggle("selected", i === state.index);
      row.setAttribute("aria-selected", i === state.index ? "true" : "false");
    });
    var row = all[state.index];
    row.scrollIntoView({ block: "nearest" });
    if (open) return openDetail(row);
    return Promise.resolve();
  }

  function openDetail(row) {
    if (!row || !window.htmx) return Promise.resolve();
    return window.htmx.ajax("GET", row.getAttribute("data-detail-url"), { target: "#proposal-detail", swap: "outerHTML" });
  }

  function submit(form) {
    if (!form) return;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  function typing(target) {
    var tag = (target && target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("review-queue") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var row = current();
    switch (event.key) {
      case "j": select(state.index + 1, false); break;
      case "k": select(state.index - 1, false); break;
      case "Enter": if (row) { select(state.index, true); } break;
      case "a": if (row) submit(row.querySelector("form.vote-approve")); break;
      case "r": {
        var reason = row && row.querySelector("form.vote-reject input[name=reason]");
        if (reason) { event.preventDefault(); reason.focus(); }
        break;
      }
      case "e":
        if (row) {
          event.preventDefault();
          select(state.index, true).then(function () {
            var text = document.getElementById("edit-text");
            if (text) { text.focus(); text.select(); }
          });
        }
        break;
      case "x": {
        var box = row && row.querySelector("input[type=checkbox]");
        if (box) box.checked = !box.checked;
        break;
      }
      default: return;
    }
  });

  document.addEventListener("click", function (event) {
    var row = event.target.closest && event.target.closest("#review-queue .proposal-row");
    if (row) select(rows().indexOf(row), false);
  });

  // After a vote the queue is re-rendered: keep the selection where it was.
  document.addEventListener("htmx:afterSwap", function () {
    if (document.getElementById("review-queue")) select(state.index, false);
  });

  // A refused vote (403 viewer, 409 already decided) answers with a sentence: show it.
  document.addEventListener("htmx:responseError", function (event) {
    var box = document.getElementById("review-message");
    if (box) box.textContent = (event.detail.xhr && event.detail.xhr.responseText) || "The action was refused.";
  });

  window.AWPReview = { select: select };
  select(0, false);
})();
