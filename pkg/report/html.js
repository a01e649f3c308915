(function () {
  "use strict";
  // A broken invariant and the delivery (or the call to an external)
  // that broke it light up together.
  function light(on, breach) {
    var bar = document.getElementById(breach.getAttribute("data-bar"));
    breach.classList.toggle("lit", on);
    if (bar) { bar.classList.toggle("lit", on); }
  }
  var breaches = document.querySelectorAll(".breach[data-bar]");
  for (var i = 0; i < breaches.length; i++) {
    (function (b) {
      b.addEventListener("mouseenter", function () { light(true, b); });
      b.addEventListener("mouseleave", function () { light(false, b); });
    })(breaches[i]);
  }

  // A label is never cut: one that does not fit in its bar goes under the
  // bars, on the first row where it meets no other label, and the lane
  // grows to hold the rows. A call to an external is a mark too narrow
  // for any words: its label always goes under. The labels of marked bars
  // (a crash, a hold, a restart, a broken invariant, a wait for a
  // broker's consumer) are placed first and always; a plain label that
  // finds no room within a few rows is left to its bar's tooltip.
  var rowHeight = 19, barBottom = 40, plainRows = 3;
  function marked(bar) {
    return bar.classList.contains("wait") || bar.classList.contains("crash") || bar.classList.contains("broken") || bar.querySelector(".held, .restart") !== null;
  }
  function layOut(track) {
    var width = track.clientWidth;
    var bars = Array.prototype.slice.call(track.querySelectorAll(".bar, .wait, .call"));
    bars.sort(function (a, b) { return (marked(b) - marked(a)) || (a.offsetLeft - b.offsetLeft); });
    var rows = [], hidden = 0;
    bars.forEach(function (bar) {
      var label = bar.querySelector(".label");
      if (!label) { return; }
      if (!bar.classList.contains("call") && label.scrollWidth + 6 <= bar.offsetWidth) { return; }
      label.classList.add("under");
      var w = label.offsetWidth;
      var from = Math.max(0, Math.min(bar.offsetLeft, width - w));
      var r = 0;
      for (; r < rows.length; r++) {
        if (!rows[r].some(function (s) { return from < s[1] + 8 && s[0] < from + w + 8; })) { break; }
      }
      if (r >= plainRows && !marked(bar)) {
        label.hidden = true;
        hidden++;
        return;
      }
      if (r === rows.length) { rows.push([]); }
      rows[r].push([from, from + w]);
      label.style.left = (from - bar.offsetLeft - bar.clientLeft) + "px";
      label.style.top = (barBottom - bar.offsetTop - bar.clientTop + r * rowHeight) + "px";
    });
    if (rows.length > 0) {
      track.style.height = (barBottom + rows.length * rowHeight + 4) + "px";
    }
    if (hidden > 0) {
      track.setAttribute("data-unlabelled", String(hidden));
      track.title = hidden + " labels do not fit: each bar says what it was in its tooltip";
    }
  }
  var tracks = document.querySelectorAll(".track");
  for (var t = 0; t < tracks.length; t++) { layOut(tracks[t]); }
  document.body.setAttribute("data-ready", String(breaches.length));
})();
