// weft web interface: progressive enhancement only. Pages work without it, except
// uploading, which sends the file in pieces through the REST API with the session cookie.
(function () {
  "use strict";

  // Times arrive in UTC; show them in the browser's time zone.
  function localiseTimes() {
    var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    document.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d.getTime())) {
        t.title = t.textContent;
        t.textContent = fmt.format(d);
      }
    });
  }

  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";

  // A logical path as the REST routes take it: each segment percent-encoded.
  function apiPath(path) {
    return path.split("/").filter(function (s) { return s.length > 0; })
      .map(encodeURIComponent).join("/");
  }

  function humanSize(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
  }

  // One request with the session's CSRF token; resolves to the parsed JSON answer (or
  // null), rejects with the zone's {code, message}. Progress of the body sent goes to
  // onSent(bytes).
  function request(method, url, body, contentType, onSent) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open(method, url);
      xhr.setRequestHeader("X-CSRF-Token", csrf);
      if (contentType) { xhr.setRequestHeader("Content-Type", contentType); }
      if (onSent) {
        xhr.upload.onprogress = function (e) { onSent(e.loaded); };
      }
      xhr.onload = function () {
        var answer = null;
        try { answer = xhr.responseText ? JSON.parse(xhr.responseText) : null; } catch (e) { answer = null; }
        if (xhr.status >= 200 && xhr.status < 300) {
          resolve(answer);
        } else {
          reject(answer && answer.code ? answer : { code: "http_" + xhr.status, message: xhr.statusText });
        }
      };
      xhr.onerror = function () { reject({ code: "unreachable", message: "the zone did not answer" }); };
      xhr.send(body);
    });
  }

  // Pieces of 8 MiB: what an S3 resource takes at the least (5 MiB), a power of two as
  // the zone asks, and small enough that a cut loses little.
  var PIECE = 8 * 1024 * 1024;

  function upload(file, collection, progress) {
    var path = collection + "/" + file.name;
    if (file.size === 0) {
      return request("PUT", "/api/v1/data/" + apiPath(path), file, "application/octet-stream", null);
    }
    var begin = JSON.stringify({ path: path, size: file.size, piece_size: PIECE });
    return request("POST", "/api/v1/uploads", begin, "application/json", null).then(function (up) {
      var done = 0;
      var index = 0;
      function next() {
        if (index >= up.pieces) {
          return request("POST", "/api/v1/uploads/" + encodeURIComponent(up.id) + "/complete",
            "{}", "application/json", null);
        }
        var start = index * up.piece_size;
        var piece = file.slice(start, Math.min(start + up.piece_size, file.size));
        var url = "/api/v1/uploads/" + encodeURIComponent(up.id) + "/" + index;
        return request("PUT", url, piece, "application/octet-stream", function (sent) {
          progress(done + Math.min(sent, piece.size));
        }).then(function () {
          done += piece.size;
          progress(done);
          index += 1;
          return next();
        });
      }
      return next().catch(function (err) {
        // Nothing of a failed upload stays: the zone drops its pieces.
        request("DELETE", "/api/v1/uploads/" + encodeURIComponent(up.id), null, null, null)
          .catch(function () {});
        throw err;
      });
    });
  }

  function enableUpload() {
    var form = document.getElementById("upload");
    if (!form) { return; }
    form.hidden = false;
    var input = document.getElementById("upload-file");
    var status = document.getElementById("upload-status");
    var bar = document.getElementById("upload-progress");
    var text = document.getElementById("upload-text");
    var button = form.querySelector("button[type=submit]");
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var file = input.files && input.files[0];
      if (!file) { return; }
      button.disabled = true;
      input.disabled = true;
      status.hidden = false;
      status.classList.remove("failed");
      bar.max = Math.max(file.size, 1);
      bar.value = 0;
      var show = function (n) {
        bar.value = n;
        text.textContent = "Uploading " + file.name + ": " + humanSize(n) + " of " + humanSize(file.size);
      };
      show(0);
      upload(file, form.getAttribute("data-collection"), show).then(function () {
        bar.value = bar.max;
        text.textContent = "Uploaded " + file.name + " (" + humanSize(file.size) + ")";
        window.location.reload();
      }, function (err) {
        status.classList.add("failed");
        text.textContent = "Upload failed: " + err.message + " (" + err.code + ")";
        button.disabled = false;
        input.disabled = false;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localiseTimes();
    enableUpload();
  });
})();

// Transfers page: the charts' time axis in the browser's time zone, and the map of zones
// fetched again every few seconds while the page is visible.
(function () {
  "use strict";

  function localiseTicks(root) {
    var time = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
    var date = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
    root.querySelectorAll("text[data-at]").forEach(function (t) {
      var d = new Date(Number(t.getAttribute("data-at")));
      if (!isNaN(d.getTime())) {
        t.textContent = (t.getAttribute("data-fmt") === "date" ? date : time).format(d);
      }
    });
  }

  var EVERY = 4000;

  function liveMap() {
    var box = document.querySelector("[data-live]");
    if (!box) { return; }
    var status = document.getElementById("map-status");
    var clock = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
    function refresh() {
      if (document.hidden) { return; }
      fetch(box.getAttribute("data-live"), { credentials: "same-origin", cache: "no-store" })
        .then(function (r) {
          // A session that ended sends the login page: stop rather than draw it.
          if (!r.ok || r.redirected) { throw new Error("status " + r.status); }
          return r.text();
        })
        .then(function (svg) {
          box.innerHTML = svg;
          var map = box.querySelector("svg");
          box.setAttribute("data-running", map ? map.getAttribute("data-running") : "0");
          if (status) { status.textContent = "live · " + clock.format(new Date()); }
        })
        .catch(function () {
          if (status) { status.textContent = "not updating: reload the page"; }
          clearInterval(timer);
        });
    }
    var timer = setInterval(refresh, EVERY);
  }

  document.addEventListener("DOMContentLoaded", function () {
    localiseTicks(document);
    liveMap();
  });
})();
