// exq dashboard: the only script. Every page works without it; it adds the live refresh of
// the dashboard (counters and the two-minute graph, drawn by the server and sent as JSON) and
// a "select all" box on listings. It never writes HTML: text goes in through textContent and
// coordinates through setAttribute.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (!box.classList || !box.classList.contains("all")) return;
    var table = box.closest("table");
    if (!table) return;
    table.querySelectorAll('input[type=checkbox][name=job]').forEach(function (c) { c.checked = box.checked; });
  });

  var live = document.getElementById("live");
  if (!live) return;
  var src = live.getAttribute("data-src");
  var every = Math.max(1000, parseInt(live.getAttribute("data-refresh"), 10) || 5000);
  var chart = document.querySelector("svg.chart");
  var state = document.getElementById("live-state");

  function text(parent, x, y, dx, dy, anchor, label) {
    var t = document.createElementNS(SVG, "text");
    t.setAttribute("x", x); t.setAttribute("y", y);
    if (dx) t.setAttribute("dx", dx);
    t.setAttribute("dy", dy);
    t.setAttribute("text-anchor", anchor);
    t.textContent = label;
    parent.appendChild(t);
  }

  function draw(c) {
    if (!chart) return;
    var w = chart.viewBox.baseVal.width, h = chart.viewBox.baseVal.height;
    var left = chart.querySelector(".grid line") ? chart.querySelector(".grid line").getAttribute("x1") : 48;
    var grid = chart.querySelector(".grid"), ys = chart.querySelector(".ylabels"), xs = chart.querySelector(".xlabels");
    grid.replaceChildren(); ys.replaceChildren(); xs.replaceChildren();
    c.y.forEach(function (t) {
      var l = document.createElementNS(SVG, "line");
      l.setAttribute("x1", left); l.setAttribute("x2", w); l.setAttribute("y1", t.pos); l.setAttribute("y2", t.pos);
      grid.appendChild(l);
      text(ys, left, t.pos, -6, 4, "end", t.label);
    });
    c.x.forEach(function (t) { text(xs, t.pos, h, 0, -8, "middle", t.label); });
    var lines = chart.querySelectorAll("polyline.line");
    c.series.forEach(function (s, i) { if (lines[i]) lines[i].setAttribute("points", s.points); });
  }

  function refresh() {
    fetch(src, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (d) {
        Object.keys(d.counters).forEach(function (k) {
          var el = document.querySelector('[data-stat="' + k + '"]');
          if (el) el.textContent = d.counters[k];
        });
        draw(d.live);
        if (state) state.textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC"; // the page shows times in UTC
        document.body.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { if (state) state.textContent = "refresh failed; retrying"; })
      .finally(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
