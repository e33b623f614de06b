// weft web interface: progressive enhancement only. Pages work without it, except
// uploading (a chosen file, or files dropped on the listing), which sends each file in
// pieces through the REST API with the session cookie, retrying a piece cut on the way
// and resuming after a reload from the pieces the zone holds.
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
          var err = answer && answer.code ? answer : { code: "http_" + xhr.status, message: xhr.statusText };
          err.status = xhr.status;
          reject(err);
        }
      };
      xhr.onerror = function () { reject({ code: "unreachable", message: "the zone did not answer", status: 0 }); };
      xhr.send(body);
    });
  }

  // Pieces of 8 MiB: what an S3 resource takes at the least (5 MiB), a power of two as
  // the zone asks, and small enough that a cut loses little.
  var PIECE = 8 * 1024 * 1024;

  // A request that failed on the way (no answer, the zone restarting, overloaded) is
  // tried again, after 0.5, 1, 2, 4, 8 and 16 s: half a minute of a network away.
  var RETRIES = 6;

  function transient(err) {
    return err.status === 0 || err.status === 429 || err.status >= 500;
  }

  function withRetry(attempt, onWait) {
    return new Promise(function (resolve, reject) {
      var tries = 0;
      function go() {
        attempt().then(resolve, function (err) {
          tries += 1;
          if (!transient(err) || tries > RETRIES) { reject(err); return; }
          var delay = 500 * Math.pow(2, tries - 1);
          if (onWait) { onWait(err, delay); }
          setTimeout(go, delay);
        });
      }
      go();
    });
  }

  // An upload's id is kept for the tab's life under the target and the file's identity,
  // so that choosing the same file again after a reload sends only the pieces the zone
  // does not hold yet.
  function resumeKey(path, file) {
    return "weft-upload:" + JSON.stringify([path, file.size, file.name, file.lastModified]);
  }

  function uploadUrl(id) {
    return "/api/v1/uploads/" + encodeURIComponent(id);
  }

  // The upload to send `file` in: the one kept for it if the zone still has it (with
  // the indices it holds), else a new one.
  function openUpload(file, path, key, onWait) {
    function fresh() {
      var begin = JSON.stringify({ path: path, size: file.size, piece_size: PIECE });
      return withRetry(function () {
        return request("POST", "/api/v1/uploads", begin, "application/json", null);
      }, onWait).then(function (up) {
        sessionStorage.setItem(key, up.id);
        up.received = [];
        return up;
      });
    }
    var id = sessionStorage.getItem(key);
    if (!id) { return fresh(); }
    return withRetry(function () { return request("GET", uploadUrl(id), null, null, null); }, onWait)
      .then(function (up) {
        if (up.path !== path || up.size !== file.size) {
          sessionStorage.removeItem(key);
          return fresh();
        }
        return up;
      }, function (err) {
        // Completed, aborted, or swept after lying idle: start again.
        if (err.status === 404) {
          sessionStorage.removeItem(key);
          return fresh();
        }
        throw err;
      });
  }

  // Sends `file` into `collection`; progress(bytes the zone holds, of which resumed).
  function upload(file, collection, progress, onWait) {
    var path = collection + "/" + file.name;
    if (file.size === 0) {
      return withRetry(function () {
        return request("PUT", "/api/v1/data/" + apiPath(path), file, "application/octet-stream", null);
      }, onWait);
    }
    var key = resumeKey(path, file);
    return openUpload(file, path, key, onWait).then(function (up) {
      var have = {};
      var done = 0;
      function length(i) {
        return Math.min((i + 1) * up.piece_size, file.size) - i * up.piece_size;
      }
      up.received.forEach(function (i) { have[i] = true; done += length(i); });
      var resumed = done;
      progress(done, resumed);
      var index = 0;
      function next() {
        while (index < up.pieces && have[index]) { index += 1; }
        if (index >= up.pieces) {
          return withRetry(function () {
            return request("POST", uploadUrl(up.id) + "/complete", "{}", "application/json", null);
          }, onWait);
        }
        var start = index * up.piece_size;
        var piece = file.slice(start, start + length(index));
        var url = uploadUrl(up.id) + "/" + index;
        return withRetry(function () {
          return request("PUT", url, piece, "application/octet-stream", function (sent) {
            progress(done + Math.min(sent, piece.size), resumed);
          });
        }, onWait).then(function () {
          done += piece.size;
          have[index] = true;
          progress(done, resumed);
          return next();
        });
      }
      return next().then(function (node) {
        sessionStorage.removeItem(key);
        return node;
      }, function (err) {
        // Refused: nothing of it stays, the zone drops its pieces. Cut off for longer
        // than the retries wait: the pieces stay, for choosing the file again.
        if (!transient(err)) {
          sessionStorage.removeItem(key);
          request("DELETE", uploadUrl(up.id), null, null, null).catch(function () {});
        }
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
    var collection = form.getAttribute("data-collection");
    var busy = false;

    function sendAll(files) {
      if (busy || files.length === 0) { return; }
      busy = true;
      button.disabled = true;
      input.disabled = true;
      status.hidden = false;
      status.classList.remove("failed");
      var i = 0;
      function one() {
        if (i >= files.length) {
          window.location.reload();
          return;
        }
        var file = files[i];
        var of = files.length > 1 ? " (" + (i + 1) + " of " + files.length + ")" : "";
        bar.max = Math.max(file.size, 1);
        bar.value = 0;
        var show = function (n, resumed) {
          bar.value = n;
          text.textContent = "Uploading " + file.name + of + ": " + humanSize(n) + " of " + humanSize(file.size) +
            (resumed > 0 ? " (resumed; " + humanSize(resumed) + " were on the zone)" : "");
        };
        var wait = function (err, delay) {
          text.textContent = "Uploading " + file.name + of + ": " + err.message + "; trying again in " +
            Math.round(delay / 1000 * 10) / 10 + " s";
        };
        show(0, 0);
        upload(file, collection, show, wait).then(function () {
          bar.value = bar.max;
          text.textContent = "Uploaded " + file.name + " (" + humanSize(file.size) + ")";
          i += 1;
          one();
        }, function (err) {
          status.classList.add("failed");
          text.textContent = "Upload of " + file.name + " failed: " + err.message + " (" + err.code + ")" +
            (transient(err) ? ". Choose the file again to go on where it stopped." : "");
          button.disabled = false;
          input.disabled = false;
          busy = false;
        });
      }
      one();
    }

    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (input.files && input.files[0]) { sendAll([input.files[0]]); }
    });
    enableDrop(sendAll);
  }

  // Files dropped on the listing upload like the chosen one, one after the other.
  function enableDrop(sendAll) {
    var zone = document.getElementById("dropzone");
    if (!zone || !zone.getAttribute("data-collection")) { return; }
    var depth = 0;
    function hasFiles(e) {
      return e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, "Files") >= 0;
    }
    zone.addEventListener("dragenter", function (e) {
      if (!hasFiles(e)) { return; }
      e.preventDefault();
      depth += 1;
      zone.classList.add("over");
    });
    zone.addEventListener("dragover", function (e) {
      if (!hasFiles(e)) { return; }
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    });
    zone.addEventListener("dragleave", function () {
      depth = Math.max(0, depth - 1);
      if (depth === 0) { zone.classList.remove("over"); }
    });
    zone.addEventListener("drop", function (e) {
      if (!hasFiles(e)) { return; }
      e.preventDefault();
      depth = 0;
      zone.classList.remove("over");
      sendAll(Array.prototype.slice.call(e.dataTransfer.files));
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
