// Cairn console: refreshes each element with a data-refresh URL once a second, replacing
// its content with the fragment the URL renders, while the page is visible. A fragment that
// marks itself final (data-final) stops the refresh and reloads the page, so that its
// controls match the new state.
(function () {
  "use strict";
  function poll(el) {
    var url = el.getAttribute("data-refresh");
    var busy = false;
    var timer = setInterval(function () {
      if (busy || document.hidden) { return; }
      busy = true;
      fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        busy = false;
        if (html === null) { return; }
        el.innerHTML = html;
        el.setAttribute("data-refreshed", String(Date.now()));
        if (el.querySelector("[data-final]")) { clearInterval(timer); location.reload(); }
      }, function () { busy = false; });
    }, 1000);
  }
  document.querySelectorAll("[data-refresh]").forEach(poll);
})();
