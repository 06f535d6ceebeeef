// arena-assets leaderboard site: column sorting, the category selector, and the two view
// checkboxes carried across pages in the URL's fragment (#style,deprecated). The tables
// and the checkboxes work without this file.
(function () {
  "use strict";
  var boxes = { style: "style-control", deprecated: "show-deprecated" };
  // the view asked for in the URL; a box this page disables (no style-controlled board
  // for the category) keeps the wish for the next page
  var wanted = (window.location.hash || "").replace(/^#/, "").split(",");

  function state() {
    var on = [];
    Object.keys(boxes).forEach(function (name) {
      var box = document.getElementById(boxes[name]);
      if (box && (box.disabled ? wanted.indexOf(name) >= 0 : box.checked)) on.push(name);
    });
    return on.join(",");
  }

  function restore() {
    Object.keys(boxes).forEach(function (name) {
      var box = document.getElementById(boxes[name]);
      if (box && !box.disabled) box.checked = wanted.indexOf(name) >= 0;
    });
  }

  function remember() {
    var s = state();
    history.replaceState(null, "", s ? "#" + s : window.location.pathname + window.location.search);
    document.querySelectorAll("a.keep-view").forEach(function (a) {
      a.href = a.getAttribute("href").split("#")[0] + (s ? "#" + s : "");
    });
  }

  function sortKey(cell, showAll) {
    if (!cell) return null;
    var v = cell.getAttribute(showAll && cell.hasAttribute("data-v-all") ? "data-v-all" : "data-v");
    if (v === null) v = cell.textContent.trim();
    if (v === "") return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }

  function sortTable(th) {
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    // a click on the sorted column turns it round; on another, its own first direction:
    // numbers high to low (score, votes, delta), ranks and text from the top
    var current = th.getAttribute("aria-sort");
    var descending = current ? current === "ascending" : th.getAttribute("data-first") === "desc";
    var showAll = !!(document.getElementById(boxes.deprecated) || {}).checked;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      // rows the board cannot rank stay below the ranked ones, whatever the column
      var ua = a.classList.contains("unranked"), ub = b.classList.contains("unranked");
      if (ua !== ub) return ua ? 1 : -1;
      var x = sortKey(a.cells[index], showAll), y = sortKey(b.cells[index], showAll);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      var c = x < y ? -1 : 1;
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.documentElement.classList.add("js");
    restore();
    remember();
    Object.keys(boxes).forEach(function (name) {
      var box = document.getElementById(boxes[name]);
      if (box) box.addEventListener("change", remember);
    });
    var select = document.getElementById("category-select");
    if (select) {
      select.addEventListener("change", function () {
        var s = state();
        window.location.href = select.value + (s ? "#" + s : "");
      });
    }
    document.querySelectorAll("table.board th[data-sort]").forEach(function (th) {
      th.addEventListener("click", function () { sortTable(th); });
    });
  });
})();
