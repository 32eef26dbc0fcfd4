/* Search on a page opened from disk (file://).

   The site's search runs in a web worker, and browsers refuse to start a worker from a
   file:// page. On such a page this replaces Worker with one that runs the worker's
   script in a hidden iframe of the page's own origin: messages go both ways as copies
   (structuredClone, as between a page and a real worker) and one at a time, and the
   worker's importScripts loads scripts into the iframe and returns a promise, which the
   search worker of Material for MkDocs awaits (it checks for "IFrameWorker" in its parent).

   mkdocs.yml lists this file in extra.polyfills; Material's offline plugin then adds no
   shim of its own (its default loads one from unpkg.com, and the site loads nothing from
   elsewhere). Served over http(s), the page keeps the browser's Worker. */
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  function loadScript(frameDocument, url) {
    return new Promise(function (resolve, reject) {
      var script = frameDocument.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = function () {
        reject(new Error("could not load " + url));
      };
      frameDocument.head.appendChild(script);
    });
  }

  function IFrameWorker(url) {
    var target = new EventTarget();
    var frame = document.createElement("iframe");
    var pending = [];
    var closed = false;
    var worker = this;
    var scriptUrl = new URL(url, document.baseURI).href;

    frame.hidden = true;
    (document.body || document.documentElement).appendChild(frame);
    var frameWindow = frame.contentWindow;

    function toPage(data) {
      var event = new MessageEvent("message", { data: structuredClone(data) });
      setTimeout(function () {
        if (typeof worker.onmessage === "function") {
          worker.onmessage(event);
        }
        target.dispatchEvent(event);
      }, 0);
    }

    function toWorker(data) {
      var copy = frameWindow.structuredClone(data);
      setTimeout(function () {
        frameWindow.dispatchEvent(new frameWindow.MessageEvent("message", { data: copy }));
      }, 0);
    }

    function fail(error) {
      var event = new ErrorEvent("error", { message: String(error), error: error });
      if (typeof worker.onerror === "function") {
        worker.onerror(event);
      }
      target.dispatchEvent(event);
    }

    frameWindow.postMessage = toPage;
    frameWindow.importScripts = function () {
      var urls = Array.prototype.slice.call(arguments);
      return urls.reduce(function (done, next) {
        return done.then(function () {
          return loadScript(frameWindow.document, new URL(next, scriptUrl).href);
        });
      }, Promise.resolve());
    };

    this.onmessage = null;
    this.onerror = null;
    this.addEventListener = target.addEventListener.bind(target);
    this.removeEventListener = target.removeEventListener.bind(target);
    this.dispatchEvent = target.dispatchEvent.bind(target);
    // What the page posts before the script has loaded waits for it, in order.
    this.postMessage = function (data) {
      if (closed) {
        return;
      }
      if (pending) {
        pending.push(data);
      } else {
        toWorker(data);
      }
    };
    this.terminate = function () {
      closed = true;
      frame.remove();
    };

    loadScript(frameWindow.document, scriptUrl).then(function () {
      if (closed) {
        return;
      }
      var waiting = pending;
      pending = null;
      waiting.forEach(toWorker);
    }, fail);
  }

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
