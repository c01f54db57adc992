/*
 * transformer-trace: attention explorer and value browser.
 *
 * Offline and dependency-free: reads <report>/data/index.json and the .npy files next to it
 * (written by generator/tensor_data.py) and draws them on <canvas>, with a table alternative.
 *
 *   <div class="tt-explorer" data-index="../../data/index.json" data-group="encoder-self" data-layer="0" [data-head="2"]></div>
 *   <div class="tt-values" data-index="../../data/index.json" data-tensor="encoder.layers.0.output"></div>
 *
 * data-index is relative to the page, so the site works under any sub-path. Material's instant
 * navigation swaps pages without reloading this script: elements are set up on every document$
 * emission (or DOMContentLoaded without Material), once each (data-tt-ready).
 */
(function () {
  "use strict";
  if (window.ttExplorer) return; // the script ran already: keep the first instance

  // ------------------------------------------------------------------ colour map (viridis)

  var VIRIDIS_HEX =
    "44015444025645045745055946075a46085c460a5d460b5e470d60470e61471063471164471365481467481668481769" +
    "48186a481a6c481b6d481c6e481d6f481f70482071482173482374482475482576482677482878482979472a7a472c7a" +
    "472d7b472e7c472f7d46307e46327e46337f463480453581453781453882443983443a83443b84433d84433e85423f85" +
    "4240864241864142874144874045884046883f47883f48893e49893e4a893e4c8a3d4d8a3d4e8a3c4f8a3c508b3b518b" +
    "3b528b3a538b3a548c39558c39568c38588c38598c375a8c375b8d365c8d365d8d355e8d355f8d34608d34618d33628d" +
    "33638d32648e32658e31668e31678e31688e30698e306a8e2f6b8e2f6c8e2e6d8e2e6e8e2e6f8e2d708e2d718e2c718e" +
    "2c728e2c738e2b748e2b758e2a768e2a778e2a788e29798e297a8e297b8e287c8e287d8e277e8e277f8e27808e26818e" +
    "26828e26828e25838e25848e25858e24868e24878e23888e23898e238a8d228b8d228c8d228d8d218e8d218f8d21908d" +
    "21918c20928c20928c20938c1f948c1f958b1f968b1f978b1f988b1f998a1f9a8a1e9b8a1e9c891e9d891f9e891f9f88" +
    "1fa0881fa1881fa1871fa28720a38620a48621a58521a68522a78522a88423a98324aa8325ab8225ac8226ad8127ad81" +
    "28ae8029af7f2ab07f2cb17e2db27d2eb37c2fb47c31b57b32b67a34b67935b77937b87838b9773aba763bbb753dbc74" +
    "3fbc7340bd7242be7144bf7046c06f48c16e4ac16d4cc26c4ec36b50c46a52c56954c56856c66758c7655ac8645cc863" +
    "5ec96260ca6063cb5f65cb5e67cc5c69cd5b6ccd5a6ece5870cf5773d05675d05477d1537ad1517cd2507fd34e81d34d" +
    "84d44b86d54989d5488bd6468ed64590d74393d74195d84098d83e9bd93c9dd93ba0da39a2da37a5db36a8db34aadc32" +
    "addc30b0dd2fb2dd2db5de2bb8de29bade28bddf26c0df25c2df23c5e021c8e020cae11fcde11dd0e11cd2e21bd5e21a" +
    "d8e219dae319dde318dfe318e2e418e5e419e7e419eae51aece51befe51cf1e51df4e61ef6e620f8e621fbe723fde725";
  var VIRIDIS = [];
  for (var i = 0; i < 256; i++) {
    VIRIDIS.push([0, 2, 4].map(function (k) { return parseInt(VIRIDIS_HEX.substr(i * 6 + k, 2), 16); }));
  }
  var MISSING = [150, 150, 150]; // NaN and +-inf cells

  function colourAt(t) {
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    return VIRIDIS[Math.round(t * 255)];
  }

  function cssGradient() {
    var stops = [];
    for (var k = 0; k <= 8; k++) {
      var c = VIRIDIS[Math.round(k * 255 / 8)];
      stops.push("rgb(" + c.join(",") + ") " + (k * 12.5) + "%");
    }
    return "linear-gradient(to right, " + stops.join(", ") + ")";
  }

  // ------------------------------------------------------------------ numbers

  function fmt(v, digits) {
    if (digits === undefined) digits = 4;
    if (Number.isNaN(v)) return "nan";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    var text = v.toFixed(digits);
    return /^-0\.?0*$/.test(text) ? text.slice(1) : text;
  }

  function fmtFull(v, isFloat32) {
    // The shortest decimal that reads back as the same float32 (or float64) value.
    if (!Number.isFinite(v)) return fmt(v);
    if (!isFloat32) return String(v);
    for (var p = 1; p <= 9; p++) {
      var text = v.toPrecision(p);
      if (Math.fround(parseFloat(text)) === v) return String(parseFloat(text));
    }
    return String(v);
  }

  // ------------------------------------------------------------------ .npy

  function halfToFloat(h) {
    var s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    if (e === 0) return s * Math.pow(2, -14) * (f / 1024);
    if (e === 31) return f ? NaN : s * Infinity;
    return s * Math.pow(2, e - 15) * (1 + f / 1024);
  }

  /** Parse a .npy file (format 1, 2 or 3; little-endian; C order). */
  function parseNpy(buffer) {
    var bytes = new Uint8Array(buffer);
    var magic = String.fromCharCode.apply(null, bytes.subarray(1, 6));
    if (bytes[0] !== 0x93 || magic !== "NUMPY") throw new Error("not a .npy file");
    var view = new DataView(buffer), major = bytes[6], headerLen, start;
    if (major === 1) { headerLen = view.getUint16(8, true); start = 10; }
    else if (major === 2 || major === 3) { headerLen = view.getUint32(8, true); start = 12; }
    else throw new Error(".npy format version " + major + " is not supported");
    var header = new TextDecoder(major === 3 ? "utf-8" : "latin1").decode(bytes.subarray(start, start + headerLen));
    var descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
    var fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
    var shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
    if (!descr || !fortran || !shapeText) throw new Error("unreadable .npy header: " + header);
    if (fortran[1] === "True") throw new Error("Fortran-ordered arrays are not supported");
    var shape = shapeText[1].split(",").map(function (s) { return s.trim(); }).filter(Boolean).map(Number);
    var count = shape.reduce(function (a, b) { return a * b; }, 1);
    var offset = start + headerLen, dtype = descr[1];
    var sizes = { "<f4": 4, "<f2": 2, "<f8": 8, "<i8": 8, "<i4": 4, "|b1": 1, "|u1": 1, "<u1": 1, "|i1": 1 };
    if (!(dtype in sizes)) throw new Error("dtype " + dtype + " is not supported (little-endian f2/f4/f8, i4/i8, b1, u1)");
    var raw = buffer.slice(offset, offset + count * sizes[dtype]); // a copy: typed arrays need aligned offsets
    if (raw.byteLength !== count * sizes[dtype]) throw new Error(".npy file is truncated");
    var data;
    if (dtype === "<f4") data = new Float32Array(raw);
    else if (dtype === "<f8") data = new Float64Array(raw);
    else if (dtype === "<f2") {
      var halves = new Uint16Array(raw);
      data = new Float32Array(count);
      for (var k = 0; k < count; k++) data[k] = halfToFloat(halves[k]);
    } else if (dtype === "<i8") {
      var big = new BigInt64Array(raw);
      data = new Float64Array(count);
      for (var j = 0; j < count; j++) data[j] = Number(big[j]);
    } else if (dtype === "<i4") data = new Int32Array(raw);
    else if (dtype === "|i1") data = new Int8Array(raw);
    else data = new Uint8Array(raw);
    return { shape: shape, dtype: dtype, data: data, isFloat: dtype.charAt(1) === "f", isFloat32: dtype === "<f4" };
  }

  // ------------------------------------------------------------------ loading (cached across instant navigation)

  var cache = new Map();

  function fetchOnce(url, kind) {
    if (!cache.has(url)) {
      var promise = fetch(url).then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status + " for " + url);
        return kind === "json" ? response.json() : response.arrayBuffer().then(parseNpy);
      });
      promise.catch(function () { cache.delete(url); }); // a failed load may be retried
      cache.set(url, promise);
    }
    return cache.get(url);
  }

  function loadIndex(el) {
    var url = new URL(el.getAttribute("data-index"), document.baseURI).href;
    return fetchOnce(url, "json").then(function (index) {
      var root = new URL("../", url).href; // the report folder: index.json lives in <report>/data/
      var byName = {};
      index.tensors.forEach(function (t) { byName[t.name] = t; });
      return {
        index: index,
        root: root,
        entry: function (name) { return byName[name]; },
        tensor: function (name) {
          if (!byName[name]) return Promise.reject(new Error("no tensor " + name + " in index.json"));
          return fetchOnce(new URL(byName[name].file, root).href, "npy");
        },
        url: function (file) { return new URL(file, root).href; },
        labels: function (key, n) {
          var list = key && index.labels[key];
          if (list && list.length === n) return list;
          var out = [];
          for (var k = 0; k < n; k++) out.push(String(k));
          return out;
        },
      };
    });
  }

  function failure(status, error) {
    var onDisk = location.protocol === "file:";
    status.hidden = false;
    status.textContent = onDisk
      ? "The interactive views need the site served over HTTP (mkdocs serve, or python -m http.server in the site folder): browsers do not let pages read data files from disk."
      : "Could not load the data: " + error.message;
    status.classList.add("tt-error");
    if (window.console) console.warn("tt-explorer:", error);
  }

  // ------------------------------------------------------------------ small DOM helpers

  var uid = 0;
  function nextId(prefix) { uid += 1; return "tt-" + prefix + "-" + uid; }

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") el.textContent = attrs[key];
      else if (key === "className") el.className = attrs[key];
      else if (attrs[key] !== null && attrs[key] !== undefined && attrs[key] !== false) el.setAttribute(key, attrs[key]);
    });
    (children || []).forEach(function (child) { if (child) el.appendChild(child); });
    return el;
  }

  function labelled(labelText, control) {
    var id = control.id || (control.id = nextId("control"));
    return h("span", { className: "tt-field" }, [h("label", { "for": id, text: labelText }), control]);
  }

  function select(options, value) {
    var el = h("select", { id: nextId("select") });
    options.forEach(function (o) {
      var option = h("option", { value: String(o[0]), text: o[1] });
      if (String(o[0]) === String(value)) option.selected = true;
      el.appendChild(option);
    });
    return el;
  }

  function whenVisible(el, fn) {
    if (!("IntersectionObserver" in window)) { fn(); return; }
    var observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) { observer.disconnect(); fn(); }
    }, { rootMargin: "300px" });
    observer.observe(el);
  }

  function legend(min, max, caption) {
    var bar = h("span", { className: "tt-legend__bar", "aria-hidden": "true" });
    bar.style.background = cssGradient();
    return h("div", { className: "tt-legend", role: "img",
      "aria-label": caption + ": viridis colour scale from " + fmt(min) + " (dark purple) to " + fmt(max) + " (yellow)" }, [
      h("span", { className: "tt-legend__caption", text: caption, "aria-hidden": "true" }),
      h("span", { className: "tt-legend__min", text: fmt(min), "aria-hidden": "true" }),
      bar,
      h("span", { className: "tt-legend__max", text: fmt(max), "aria-hidden": "true" }),
    ]);
  }

  function range(get, rows, cols) {
    var min = Infinity, max = -Infinity;
    for (var r = 0; r < rows; r++) for (var c = 0; c < cols; c++) {
      var v = get(r, c);
      if (Number.isFinite(v)) { if (v < min) min = v; if (v > max) max = v; }
    }
    if (min === Infinity) { min = 0; max = 1; }
    return [min, max];
  }

  // ------------------------------------------------------------------ heat map on a canvas

  var FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
  var OVERLAY_CELL_TEXT = 48; // px: cells over an image at least this large are outlined and show their value

  /**
   * A matrix drawn on a canvas. Hover, or focus and arrow keys, read one cell into `readout`.
   * opts: rows, cols, get(r, c), rowLabels, colLabels, min, max, title, readout (element),
   *       describe(r, c, v) -> [main text, detail text], maxWidth, maxHeight, cellMax, labels (bool),
   *       background (image element), onSelect(r, c), table (bool: add a "Show as table" toggle), digits.
   */
  function Heatmap(opts) {
    this.o = opts;
    this.cur = null;
    this.canvas = h("canvas", { className: "tt-canvas", tabindex: "0", role: "application",
      "aria-roledescription": "heat map", "aria-label": opts.title + ": " + opts.rows + " rows by " + opts.cols +
        " columns. Arrow keys move between cells, Home and End jump to the ends of a row, Page Up and Page Down move 10 rows; the value is read out below the map." });
    this.canvas._tt = this;
    this.el = h("div", { className: "tt-heatmap" }, [this.canvas]);
    if (opts.table) this.addTableToggle();
    this.bind();
  }

  Heatmap.prototype.layout = function () {
    var o = this.o, ctx = this.canvas.getContext("2d");
    ctx.font = FONT;
    var widest = function (labels, limit) {
      var w = 0;
      labels.forEach(function (s) { w = Math.max(w, ctx.measureText(s).width); });
      return Math.min(w, limit);
    };
    var showLabels = o.labels !== false;
    this.left = showLabels ? Math.ceil(widest(o.rowLabels, 110)) + 10 : 2;
    this.top = showLabels ? Math.ceil(widest(o.colLabels, 90)) + 10 : 2;
    var maxW = Math.max(40, (o.maxWidth || 560) - this.left - 4);
    var maxH = Math.max(40, (o.maxHeight || 560) - this.top - 4);
    var cellMax = o.cellMax || 44;
    this.cw = Math.min(cellMax, maxW / o.cols);
    this.ch = Math.min(cellMax, maxH / o.rows);
    if (o.square !== false) this.cw = this.ch = Math.min(this.cw, this.ch);
    this.width = Math.ceil(this.left + o.cols * this.cw + 4);
    this.height = Math.ceil(this.top + o.rows * this.ch + 4);
  };

  Heatmap.prototype.pixels = function () {
    var o = this.o, off = document.createElement("canvas");
    off.width = o.cols; off.height = o.rows;
    var octx = off.getContext("2d"), img = octx.createImageData(o.cols, o.rows), span = o.max - o.min || 1;
    for (var r = 0; r < o.rows; r++) for (var c = 0; c < o.cols; c++) {
      var v = o.get(r, c), rgb = Number.isFinite(v) ? colourAt((v - o.min) / span) : MISSING, p = 4 * (r * o.cols + c);
      img.data[p] = rgb[0]; img.data[p + 1] = rgb[1]; img.data[p + 2] = rgb[2]; img.data[p + 3] = 255;
    }
    octx.putImageData(img, 0, 0);
    return off;
  };

  Heatmap.prototype.draw = function () {
    var o = this.o;
    if (!this.off) { this.layout(); this.off = this.pixels(); }
    var dpr = window.devicePixelRatio || 1, canvas = this.canvas;
    canvas.width = Math.round(this.width * dpr);
    canvas.height = Math.round(this.height * dpr);
    canvas.style.width = this.width + "px"; // height follows from the aspect ratio (CSS height: auto)
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    var plotW = o.cols * this.cw, plotH = o.rows * this.ch;
    ctx.imageSmoothingEnabled = false;
    if (o.background && o.background.complete && o.background.naturalWidth) {
      ctx.drawImage(o.background, this.left, this.top, plotW, plotH);
      ctx.globalAlpha = 0.6;
    }
    ctx.drawImage(this.off, this.left, this.top, plotW, plotH);
    ctx.globalAlpha = 1;
    var fg = getComputedStyle(this.el).color || "#000";
    ctx.font = FONT;
    ctx.fillStyle = fg;
    if (o.labels !== false) {
      var rowStride = Math.max(1, Math.ceil(14 / this.ch)), colStride = Math.max(1, Math.ceil(14 / this.cw));
      ctx.textAlign = "right"; ctx.textBaseline = "middle";
      for (var r = 0; r < o.rows; r += rowStride) ctx.fillText(clip(ctx, o.rowLabels[r], 110), this.left - 6, this.top + (r + 0.5) * this.ch);
      ctx.save();
      ctx.translate(this.left, this.top - 6);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      for (var c = 0; c < o.cols; c += colStride) ctx.fillText(clip(ctx, o.colLabels[c], 90), 0, (c + 0.5) * this.cw);
      ctx.restore();
    }
    var overImage = o.background && this.cw >= OVERLAY_CELL_TEXT && this.ch >= OVERLAY_CELL_TEXT;
    if (overImage) { // cells over an image, large enough to outline: the patches read apart from the image's own pixels
      ctx.lineWidth = 1; ctx.strokeStyle = "rgba(255, 255, 255, 0.8)";
      for (var gr = 0; gr <= o.rows; gr++) ctx.strokeRect(this.left, this.top + gr * this.ch, plotW, 0);
      for (var gc = 0; gc <= o.cols; gc++) ctx.strokeRect(this.left + gc * this.cw, this.top, 0, plotH);
    }
    if (this.cw >= 30 && this.ch >= 18 && (!o.background || overImage)) { // numbers inside large cells
      ctx.textAlign = "center"; ctx.textBaseline = "middle";
      ctx.font = (overImage ? "bold 13px" : "11px") + " system-ui, sans-serif";
      var span = o.max - o.min || 1;
      for (var rr = 0; rr < o.rows; rr++) for (var cc = 0; cc < o.cols; cc++) {
        var v = o.get(rr, cc), t = (v - o.min) / span, x0 = this.left + (cc + 0.5) * this.cw, y0 = this.top + (rr + 0.5) * this.ch;
        if (overImage) { // over the image's pixels: white text with a dark outline reads on any of them
          ctx.lineWidth = 3; ctx.strokeStyle = "#000"; ctx.strokeText(fmt(v, 3), x0, y0);
          ctx.fillStyle = "#fff"; ctx.fillText(fmt(v, 3), x0, y0);
          continue;
        }
        ctx.fillStyle = Number.isFinite(v) && t > 0.55 ? "#000" : "#fff";
        ctx.fillText(fmt(v, 2), x0, y0);
      }
    }
    if (this.cur) {
      var w = Math.max(this.cw, 6), hgt = Math.max(this.ch, 6);
      var x = this.left + (this.cur[1] + 0.5) * this.cw - w / 2, y = this.top + (this.cur[0] + 0.5) * this.ch - hgt / 2;
      ctx.lineWidth = 3; ctx.strokeStyle = "#000"; ctx.strokeRect(x, y, w, hgt);
      ctx.lineWidth = 1.5; ctx.strokeStyle = "#fff"; ctx.strokeRect(x, y, w, hgt);
    }
  };

  function clip(ctx, text, limit) {
    text = String(text);
    if (ctx.measureText(text).width <= limit) return text;
    while (text.length > 1 && ctx.measureText(text + "…").width > limit) text = text.slice(0, -1);
    return text + "…";
  }

  Heatmap.prototype.cellAt = function (event) {
    var box = this.canvas.getBoundingClientRect(), scale = box.width ? this.width / box.width : 1; // CSS may shrink the canvas
    var x = (event.clientX - box.left) * scale - this.left, y = (event.clientY - box.top) * scale - this.top;
    var c = Math.floor(x / this.cw), r = Math.floor(y / this.ch);
    return r >= 0 && c >= 0 && r < this.o.rows && c < this.o.cols ? [r, c] : null;
  };

  Heatmap.prototype.show = function (cell) {
    this.cur = cell;
    this.draw();
    var v = this.o.get(cell[0], cell[1]);
    var text = this.o.describe ? this.o.describe(cell[0], cell[1], v)
      : [this.o.rowLabels[cell[0]] + " → " + this.o.colLabels[cell[1]] + ": " + fmt(v, this.o.digits), ""];
    var readout = this.o.readout;
    if (readout) {
      readout.querySelector(".tt-readout__value").textContent = text[0];
      readout.querySelector(".tt-readout__where").textContent = text[1] || "";
    }
  };

  Heatmap.prototype.bind = function () {
    var self = this, canvas = this.canvas;
    canvas.addEventListener("mousemove", function (e) { var cell = self.cellAt(e); if (cell) self.show(cell); });
    canvas.addEventListener("click", function (e) {
      var cell = self.cellAt(e);
      if (cell) { self.show(cell); if (self.o.onSelect) self.o.onSelect(cell[0], cell[1]); }
    });
    canvas.addEventListener("focus", function () { self.show(self.cur || [0, 0]); });
    canvas.addEventListener("keydown", function (e) {
      var cell = (self.cur || [0, 0]).slice(), rows = self.o.rows, cols = self.o.cols;
      switch (e.key) {
        case "ArrowUp": cell[0] -= 1; break;
        case "ArrowDown": cell[0] += 1; break;
        case "ArrowLeft": cell[1] -= 1; break;
        case "ArrowRight": cell[1] += 1; break;
        case "Home": cell[1] = 0; break;
        case "End": cell[1] = cols - 1; break;
        case "PageUp": cell[0] -= 10; break;
        case "PageDown": cell[0] += 10; break;
        case "Enter": case " ":
          if (self.o.onSelect) self.o.onSelect(cell[0], cell[1]);
          e.preventDefault();
          return;
        default: return;
      }
      e.preventDefault();
      cell[0] = Math.max(0, Math.min(rows - 1, cell[0]));
      cell[1] = Math.max(0, Math.min(cols - 1, cell[1]));
      self.show(cell);
    });
  };

  Heatmap.prototype.addTableToggle = function () {
    var self = this, wrapId = nextId("table");
    var button = h("button", { type: "button", className: "tt-button", "aria-expanded": "false", "aria-controls": wrapId, text: "Show as table" });
    var wrap = h("div", { id: wrapId, className: "tt-table-wrap", hidden: "hidden", tabindex: "0", role: "region", "aria-label": this.o.title + " as a table" });
    button.addEventListener("click", function () {
      var open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? "Hide the table" : "Show as table";
      wrap.hidden = !open;
      if (open && !wrap.firstChild) wrap.appendChild(matrixTable(self.o, 0, self.o.rows, 0, self.o.cols, function (v) { return fmt(v, self.o.digits); }));
    });
    this.el.appendChild(h("div", { className: "tt-table-toggle" }, [button]));
    this.el.appendChild(wrap);
  };

  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, function (ch) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]; });
  }

  /** A <table> of rows r0..r1 and columns c0..c1 with row and column headers. */
  function matrixTable(o, r0, r1, c0, c1, format) {
    var parts = ["<caption>" + escapeHtml(o.title) + "</caption><thead><tr><th scope=\"col\">" + escapeHtml(o.corner || "row \\ column") + "</th>"];
    for (var c = c0; c < c1; c++) parts.push("<th scope=\"col\">" + escapeHtml(o.colLabels[c]) + "</th>");
    parts.push("</tr></thead><tbody>");
    for (var r = r0; r < r1; r++) {
      parts.push("<tr><th scope=\"row\">" + escapeHtml(o.rowLabels[r]) + "</th>");
      for (var cc = c0; cc < c1; cc++) parts.push("<td>" + escapeHtml(format(o.get(r, cc))) + "</td>");
      parts.push("</tr>");
    }
    parts.push("</tbody>");
    var table = document.createElement("table");
    table.className = "tt-matrix";
    table.innerHTML = parts.join("");
    return table;
  }

  function readoutElement() {
    return h("p", { className: "tt-readout", "aria-live": "polite", "aria-atomic": "true" }, [
      h("span", { className: "tt-readout__value", text: "Point at a cell, or focus the map and use the arrow keys, to read its value." }),
      h("span", { className: "tt-readout__where" }),
    ]);
  }

  function redrawAll() {
    document.querySelectorAll("canvas.tt-canvas").forEach(function (canvas) { if (canvas._tt && canvas._tt.off) canvas._tt.draw(); });
  }

  // ------------------------------------------------------------------ attention explorer

  function setupExplorer(el) {
    var status = h("p", { className: "tt-status", role: "status", text: "Loading the attention data…" });
    el.appendChild(status);
    loadIndex(el).then(function (data) {
      var key = el.getAttribute("data-group");
      var group = data.index.attention.filter(function (g) { return g.key === key; })[0];
      if (!group) throw new Error("no attention group " + key + " in index.json");
      buildExplorer(el, data, group, status);
    }).catch(function (error) { failure(status, error); });
  }

  function buildExplorer(el, data, group, status) {
    var first = data.entry(group.layers[0]);
    var nHeads = first.shape[1], nRows = first.shape[2], nCols = first.shape[3];
    var rowLabels = data.labels(group.rows, nRows), colLabels = data.labels(group.cols, nCols);
    var unit = group.unit || "layer";
    var startLayer = Math.min(group.layers.length - 1, Math.max(0, parseInt(el.getAttribute("data-layer") || "0", 10) || 0));
    var layerSelect = select(group.layers.map(function (_, i) { return [i, unit + " " + (i + 1)]; }), startLayer);
    var headOptions = [["all", "all heads"]];
    for (var k = 0; k < nHeads; k++) headOptions.push([k, "head " + (k + 1)]);
    var startHead = parseInt(el.getAttribute("data-head") || "", 10);  // a head the page names, else all heads
    var headSelect = select(headOptions, startHead >= 0 && startHead < nHeads ? startHead : "all");
    layerSelect.classList.add("tt-layer");
    headSelect.classList.add("tt-head");
    var readout = readoutElement();
    var legendSlot = h("div", { className: "tt-legend-slot" });
    var view = h("div", { className: "tt-view" });
    el.appendChild(h("p", { className: "tt-title", text: group.title + ": row = query token, column = key token; each row sums to 1." }));
    el.appendChild(h("div", { className: "tt-controls" }, [labelled(cap(unit), layerSelect), labelled("Head", headSelect)]));
    el.appendChild(legendSlot);
    el.appendChild(readout); // above the maps: in view while pointing at a cell
    el.appendChild(view);

    var overlay = null;
    if (group.image) overlay = buildOverlay(el, data, group, rowLabels, readout);

    var token = 0;
    function render() {
      var layer = parseInt(layerSelect.value, 10), head = headSelect.value, mine = ++token;
      status.hidden = false;
      status.textContent = "Loading " + unit + " " + (layer + 1) + "…";
      data.tensor(group.layers[layer]).then(function (t) {
        if (mine !== token) return;
        status.hidden = true;
        status.textContent = "";
        var size = nRows * nCols;
        var at = function (hd) { return function (r, c) { return t.data[hd * size + r * nCols + c]; }; };
        view.textContent = "";
        var heads = head === "all" ? Array.from({ length: nHeads }, function (_, i) { return i; }) : [parseInt(head, 10)];
        var min = 0, max = 0;
        heads.forEach(function (hd) { max = Math.max(max, range(at(hd), nRows, nCols)[1]); });
        legendSlot.textContent = "";
        legendSlot.appendChild(legend(min, max, "Attention weight"));
        var many = heads.length > 1, width = Math.max(240, Math.min(view.clientWidth || 640, 720));
        view.classList.toggle("tt-view--grid", many);
        heads.forEach(function (hd) {
          var title = cap(unit) + " " + (layer + 1) + ", head " + (hd + 1);
          var map = new Heatmap({
            rows: nRows, cols: nCols, get: at(hd), rowLabels: rowLabels, colLabels: colLabels, min: min, max: max,
            title: group.title + ", " + title, readout: readout, table: true,
            labels: !many || nRows <= 40,
            maxWidth: many ? Math.max(200, Math.floor(width / Math.min(heads.length, nRows > 40 ? 3 : 2)) - 16) : width,
            maxHeight: many ? 320 : 640, cellMax: many ? 30 : 48,
            corner: "query \\ key",
            describe: function (r, c, v) {
              return [rowLabels[r] + " → " + colLabels[c] + ": " + fmt(v), " (" + title.toLowerCase() + "; query " + r + ", key " + c + ")"];
            },
            onSelect: overlay ? function (r) { overlay.setQuery(r); } : null,
          });
          var figure = h("figure", { className: "tt-panel" }, [many ? h("figcaption", { text: "Head " + (hd + 1) }) : null, map.el]);
          view.appendChild(figure);
          map.draw();
        });
        if (overlay) overlay.update(t, heads, layer);
      }).catch(function (error) { if (mine === token) failure(status, error); });
    }
    layerSelect.addEventListener("change", render);
    headSelect.addEventListener("change", render);
    status.hidden = true;
    whenVisible(el, render);
  }

  function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }

  /** A report with an input image: one query's attention over the patch grid, laid over the image. */
  function buildOverlay(el, data, group, tokenLabels, readout) {
    var grid = group.image.grid, skip = group.image.cls ? 1 : 0;
    var querySelect = select(tokenLabels.map(function (label, i) { return [i, label]; }), 0);
    querySelect.classList.add("tt-query");
    var slot = h("div", { className: "tt-overlay-view" });
    var legendSlot = h("div", { className: "tt-legend-slot" });
    var image = new Image();
    image.alt = "";
    image.src = data.url(group.image.file);
    var box = h("div", { className: "tt-overlay" }, [
      h("p", { className: "tt-title", text: "One query over the image: where the chosen token looks" +
        (skip ? " (patch keys only; the leading " + tokenLabels[0] + " key has no patch and is left out)" : "") +
        ". Choose the query below, or click a row of the heat map." }),
      h("div", { className: "tt-controls" }, [labelled("Query token", querySelect)]),
      legendSlot, slot,
    ]);
    el.appendChild(box);
    var state = null;
    function draw() {
      if (!state) return;
      var q = parseInt(querySelect.value, 10), t = state.t, heads = state.heads;
      var n = t.shape[2], size = n * n;
      var get = function (r, c) {
        var sum = 0;
        heads.forEach(function (hd) { sum += t.data[hd * size + q * n + skip + r * grid + c]; });
        return sum / heads.length;
      };
      var ext = range(get, grid, grid);
      var what = heads.length > 1 ? "mean over heads" : "head " + (heads[0] + 1);
      legendSlot.textContent = "";
      legendSlot.appendChild(legend(0, ext[1], "Attention weight (" + what + ")"));
      slot.textContent = "";
      var rows = [], cols = [];
      for (var i = 0; i < grid; i++) { rows.push("r" + i); cols.push("c" + i); }
      var title = "Attention of " + tokenLabels[q] + " over the image patches, " + group.unit + " " + (state.layer + 1) + ", " + what;
      var map = new Heatmap({
        rows: grid, cols: grid, get: get, rowLabels: rows, colLabels: cols, min: 0, max: ext[1], title: title, readout: readout,
        // The grid fills the same box whatever its size: ViT-B/16's 14 x 14 patches get about 25 px each, the toy ViT's 3 x 3 over 100
        table: true, background: image, maxWidth: 380, maxHeight: 380, cellMax: 128, corner: "patch row \\ column",
        describe: function (r, c, v) {
          return [tokenLabels[q] + " → r" + r + "c" + c + ": " + fmt(v), " (" + group.unit + " " + (state.layer + 1) + ", " + what + ")"];
        },
      });
      slot.appendChild(map.el);
      map.draw();
    }
    image.addEventListener("load", function () { redrawAll(); });
    querySelect.addEventListener("change", draw);
    return {
      update: function (t, heads, layer) { state = { t: t, heads: heads, layer: layer }; draw(); },
      setQuery: function (r) { querySelect.value = String(r); draw(); },
    };
  }

  // ------------------------------------------------------------------ value browser

  var ROWS_SHOWN = 64, COLS_SHOWN = 24;

  function setupValues(el) {
    var details = el.closest("details");
    var start = function () {
      if (el.getAttribute("data-tt-loaded")) return;
      el.setAttribute("data-tt-loaded", "1");
      var status = h("p", { className: "tt-status", role: "status", text: "Loading the values…" });
      el.appendChild(status);
      loadIndex(el).then(function (data) {
        var name = el.getAttribute("data-tensor");
        return data.tensor(name).then(function (t) { buildValues(el, data, data.entry(name), t, status); });
      }).catch(function (error) { failure(status, error); });
    };
    if (details) {
      if (details.open) start();
      else details.addEventListener("toggle", function () { if (details.open) start(); });
    } else whenVisible(el, start);
  }

  function buildValues(el, data, entry, t, status) {
    status.hidden = true;
    var shape = t.shape.length ? t.shape : [1];
    var rank = shape.length, lead = Math.max(0, rank - 2);
    var rows = rank >= 2 ? shape[rank - 2] : 1, cols = shape[rank - 1];
    var rowKey = rank >= 2 ? entry.labels[rank - 2] : null, colKey = entry.labels[rank - 1] || null;
    var rowLabels = rank >= 2 ? data.labels(rowKey, rows) : ["0"], colLabels = data.labels(colKey, cols);
    var controls = h("div", { className: "tt-controls" });
    var inputs = [];
    for (var a = 0; a < lead; a++) {
      var input = h("input", { type: "number", min: "0", max: String(shape[a] - 1), value: "0", step: "1", inputmode: "numeric", className: "tt-axis" });
      var key = entry.labels[a];
      var note = h("output", { className: "tt-axis-note" });
      inputs.push({ input: input, labels: data.labels(key, shape[a]), note: note, keyed: !!key });
      controls.appendChild(h("span", { className: "tt-field" }, [
        h("label", { "for": input.id = nextId("axis"), text: "Axis " + a + (key ? " (" + key.replace(/_/g, " ") + ")" : "") + ", 0–" + (shape[a] - 1) }), input, note]));
    }
    var rowStart = null, colStart = null;
    if (rows > ROWS_SHOWN) {
      rowStart = h("input", { type: "number", min: "0", max: String(rows - 1), value: "0", step: String(ROWS_SHOWN), className: "tt-row-start" });
      controls.appendChild(labelled("First row shown", rowStart));
    }
    if (cols > COLS_SHOWN) {
      colStart = h("input", { type: "number", min: "0", max: String(cols - 1), value: "0", step: String(COLS_SHOWN), className: "tt-col-start" });
      controls.appendChild(labelled("First column shown", colStart));
    }
    var digits = select([["4", "4 decimals"], ["8", "8 decimals"], ["full", t.isFloat ? "exact (shortest " + (t.isFloat32 ? "float32" : "float64") + ")" : "exact"]], t.isFloat ? "4" : "full");
    digits.classList.add("tt-digits");
    controls.appendChild(labelled("Numbers", digits));
    var desc = h("p", { className: "tt-slice" });
    var legendSlot = h("div", { className: "tt-legend-slot" });
    var mapSlot = h("div", { className: "tt-view" });
    var readout = readoutElement();
    var tableWrap = h("div", { className: "tt-table-wrap", tabindex: "0", role: "region", "aria-label": "Values of the selected slice" });
    [controls, desc, legendSlot, readout, mapSlot, tableWrap].forEach(function (child) { el.appendChild(child); });

    function clampInput(input, max) {
      var v = parseInt(input.value, 10);
      if (!Number.isFinite(v) || v < 0) v = 0;
      if (v > max) v = max;
      return v;
    }

    function render() {
      var index = inputs.map(function (item, a) { return clampInput(item.input, shape[a] - 1); });
      inputs.forEach(function (item, a) { item.note.textContent = item.keyed ? "= " + item.labels[index[a]] : ""; });
      var base = 0, stride = rows * cols;
      for (var a = lead - 1, mult = stride; a >= 0; a--) { base += index[a] * mult; mult *= shape[a]; }
      var get = function (r, c) { return Number(t.data[base + r * cols + c]); };
      var format = digits.value === "full" ? function (v) { return t.isFloat ? fmtFull(v, t.isFloat32) : String(v); }
        : function (v) { return t.isFloat ? fmt(v, parseInt(digits.value, 10)) : String(v); };
      var r0 = rowStart ? clampInput(rowStart, rows - 1) : 0, c0 = colStart ? clampInput(colStart, cols - 1) : 0;
      var r1 = Math.min(rows, r0 + ROWS_SHOWN), c1 = Math.min(cols, c0 + COLS_SHOWN);
      var sliceText = entry.name + "[" + index.concat(rank >= 2 ? [":", ":"] : rank === 1 && t.shape.length ? [":"] : []).join(", ") + "]";
      desc.textContent = "Slice " + sliceText + ": " + rows + " × " + cols + " values of the recorded " + (t.shape.length ? "(" + t.shape.join(", ") + ")" : "scalar") +
        " " + entry.dtype + " tensor. The table shows rows " + r0 + "–" + (r1 - 1) + " and columns " + c0 + "–" + (c1 - 1) + "; the heat map shows the whole slice.";
      var ext = range(get, rows, cols);
      legendSlot.textContent = "";
      legendSlot.appendChild(legend(ext[0], ext[1], "Value"));
      var o = { rows: rows, cols: cols, get: get, rowLabels: rowLabels, colLabels: colLabels, min: ext[0], max: ext[1],
        title: "Heat map of " + sliceText, readout: readout, square: false, maxWidth: 720, maxHeight: 420, cellMax: 40,
        digits: 4, corner: "row \\ column",
        describe: function (r, c, v) {
          return [sliceText.replace(/:, :\]$|:\]$/, "") + (rank >= 2 ? r + ", " + c + "]" : rank === 1 && t.shape.length ? c + "]" : "") + " = " + format(v),
            " (" + rowLabels[r] + ", " + colLabels[c] + ")"];
        } };
      mapSlot.textContent = "";
      var map = new Heatmap(o);
      mapSlot.appendChild(map.el);
      map.draw();
      tableWrap.textContent = "";
      o.title = "Values of " + sliceText + (r1 - r0 < rows || c1 - c0 < cols ? " (rows " + r0 + "–" + (r1 - 1) + ", columns " + c0 + "–" + (c1 - 1) + ")" : "");
      var table = matrixTable(o, r0, r1, c0, c1, format);
      tableWrap.appendChild(table);
    }
    inputs.forEach(function (item) { item.input.addEventListener("input", render); });
    [rowStart, colStart, digits].forEach(function (c) { if (c) c.addEventListener(c.tagName === "SELECT" ? "change" : "input", render); });
    render();
  }

  // ------------------------------------------------------------------ set-up (instant navigation safe)

  function setupAll() {
    document.querySelectorAll(".tt-explorer:not([data-tt-ready])").forEach(function (el) {
      el.setAttribute("data-tt-ready", "1");
      setupExplorer(el);
    });
    document.querySelectorAll(".tt-values:not([data-tt-ready])").forEach(function (el) {
      el.setAttribute("data-tt-ready", "1");
      setupValues(el);
    });
  }

  window.ttExplorer = { setupAll: setupAll, parseNpy: parseNpy, fmt: fmt, fmtFull: fmtFull };

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(function () { setupAll(); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setupAll);
  } else {
    setupAll();
  }
  // Colour scheme switches change the label colour drawn on the canvases.
  if (document.body) new MutationObserver(redrawAll).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
