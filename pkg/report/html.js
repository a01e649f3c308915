(function () {
  "use strict";
  // A broken invariant and the delivery that broke it light up together.
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
  document.body.setAttribute("data-ready", String(breaches.length));
})();
