/* Regenerate a report from the browser, under `python -m transformer_trace serve` only.
 *
 * Static pages carry a ".tt-regenerate" block showing the equivalent CLI command. When the page came from
 * the serve process (which adds window.ttServe and a live-reload connection to every page it serves), this
 * script asks <site root>/api/status and, if it answers, replaces the block with a form built from the
 * fields the server lists for each report (generator/site/forms.py). Submitting posts to
 * <site root>/api/regenerate, shows the server's progress, and reloads the page once the new site is live.
 * On a static host nothing is requested and the command stays.
 */
(function () {
  "use strict";

  // The site root, from Material's configuration, resolved once against the page the script was loaded on
  // (with instant navigation the script is not evaluated again, and "base" stays relative to that page).
  var ROOT = (function () {
    var base = ".";
    try {
      base = JSON.parse(document.querySelector("#__config").textContent).base || ".";
    } catch (e) { /* not a Material page: assume the script sits at the root's level */ }
    return new URL(base.replace(/\/?$/, "/"), location.href);
  })();
  var api = function (path) { return new URL("api/" + path, ROOT).href; };
  var uid = 0;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }

  function fieldRow(model, field, ids) {
    var id = "tt-field-" + ids + "-" + field.name;
    var hintId = id + "-hint";
    var hint = field.hint || "";
    if (field.type === "file" && field.value) hint += (hint ? ". " : "") + "Now: " + field.value;
    var input;
    if (field.type === "file") {
      input = el("input", { id: id, name: field.name, type: "file", accept: field.accept || null, "aria-describedby": hintId });
    } else {
      input = el("input", {
        id: id, name: field.name, type: "text", "aria-describedby": hintId, autocomplete: "off", spellcheck: field.type === "text" ? "true" : "false",
        inputmode: field.type === "number" ? "numeric" : null,
      });
      input.value = field.value === null || field.value === undefined ? "" : String(field.value);
    }
    var row = el("div", { className: "tt-field tt-field--" + field.type }, [
      el("label", { for: id, text: field.label }),
      input,
      el("p", { className: "tt-hint", id: hintId, text: hint }),
    ]);
    if (field.type === "file") {
      var chosen = el("p", { className: "tt-chosen", "aria-live": "polite" });
      row.appendChild(chosen);
      row.classList.add("tt-drop");
      var show = function () { chosen.textContent = input.files && input.files.length ? "Chosen: " + input.files[0].name : ""; };
      input.addEventListener("change", show);
      ["dragenter", "dragover"].forEach(function (type) {
        row.addEventListener(type, function (event) { event.preventDefault(); row.classList.add("tt-drop--over"); });
      });
      ["dragleave", "dragend"].forEach(function (type) {
        row.addEventListener(type, function () { row.classList.remove("tt-drop--over"); });
      });
      row.addEventListener("drop", function (event) {
        event.preventDefault();
        row.classList.remove("tt-drop--over");
        if (event.dataTransfer && event.dataTransfer.files && event.dataTransfer.files.length) {
          input.files = event.dataTransfer.files;
          show();
        }
      });
    }
    return row;
  }

  function buildForm(block, status) {
    var fixed = block.getAttribute("data-model") || "";
    var models = status.models.filter(function (m) { return !fixed || m.key === fixed; });
    if (!models.length) return;
    var ids = ++uid;
    var errorId = "tt-error-" + ids;
    var fieldsBox = el("div", { className: "tt-fields" });
    var select = null;
    var current = function () { return select ? select.value : models[0].key; };
    var modelOf = function (key) { return models.filter(function (m) { return m.key === key; })[0]; };
    var renderFields = function () {
      fieldsBox.textContent = "";
      modelOf(current()).fields.forEach(function (field) { fieldsBox.appendChild(fieldRow(current(), field, ids)); });
    };
    var children = [el("legend", { text: fixed ? "Regenerate this report" : "Regenerate a report" })];
    if (!fixed) {
      var selectId = "tt-field-" + ids + "-model";
      select = el("select", { id: selectId, name: "model" }, models.map(function (m) {
        return el("option", { value: m.key, text: m.title });
      }));
      select.addEventListener("change", renderFields);
      children.push(el("div", { className: "tt-field tt-field--select" }, [el("label", { for: selectId, text: "Report" }), select]));
    }
    children.push(fieldsBox);
    var button = el("button", { type: "submit", className: "md-button md-button--primary tt-submit", text: "Regenerate" });
    var progress = el("progress", { className: "tt-progress", hidden: true, "aria-label": "Regeneration progress" });
    var statusLine = el("p", { className: "tt-status", role: "status", "aria-live": "polite" });
    var errorLine = el("p", { className: "tt-error", id: errorId, role: "alert", "aria-live": "assertive" });
    children.push(el("div", { className: "tt-actions" }, [button, progress]), statusLine, errorLine);
    var form = el("form", { className: "tt-form", novalidate: true, "data-model": fixed || null }, [el("fieldset", {}, children)]);
    renderFields();

    var lastStep = "";
    var onProgress = function (data) {
      if (data.total) { progress.max = data.total; progress.value = data.done; } else { progress.removeAttribute("value"); }
      if (data.step && data.step !== lastStep && data.step !== "live") { lastStep = data.step; statusLine.textContent = "Working: " + data.step + "…"; }
    };
    var setError = function (message, fieldsRow) {
      errorLine.textContent = message ? "Error: " + message : "";
      form.querySelectorAll("input, select").forEach(function (input) {
        var bad = !!message && fieldsRow.some(function (f) {
          return f.name === input.name && (message.indexOf(f.option + " ") >= 0 || message.indexOf(f.option + "=") >= 0 || message.indexOf(" " + f.name + " ") >= 0);
        });
        if (bad) {
          input.setAttribute("aria-invalid", "true");
          input.setAttribute("aria-describedby", (input.getAttribute("aria-describedby") || "").replace(" " + errorId, "") + " " + errorId);
        } else {
          input.removeAttribute("aria-invalid");
        }
      });
    };
    var finish = function () {
      window.ttServe.busy = false;
      button.disabled = false;
      progress.hidden = true;
      form.removeAttribute("aria-busy");
      var i = window.ttServe.listeners.indexOf(onProgress);
      if (i >= 0) window.ttServe.listeners.splice(i, 1);
    };

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (window.ttServe.busy) return;
      var model = modelOf(current());
      var fields = { model: model.key };
      var file = null;
      var fileField = null;
      model.fields.forEach(function (f) {
        var input = form.querySelector('[name="' + f.name + '"]');
        if (!input) return;
        if (f.type === "file") {
          if (input.files && input.files.length) { file = input.files[0]; fileField = f.name; }
        } else if (f.type === "number") {
          if (input.value.trim() !== "") fields[f.name] = input.value.trim();
        } else {
          fields[f.name] = input.value;
        }
      });
      if (file && file.size > status.max_upload) {
        setError(file.name + " is " + (file.size / 1e6).toFixed(1) + " MB, more than the " + Math.round(status.max_upload / 1048576) + " MB limit", model.fields);
        return;
      }
      var body;
      var headers = {};
      if (file) {
        body = new FormData();
        Object.keys(fields).forEach(function (key) { body.append(key, fields[key]); });
        body.append(fileField, file, file.name);
      } else {
        body = JSON.stringify(fields);
        headers["Content-Type"] = "application/json";
      }
      setError("", model.fields);
      window.ttServe.busy = true;
      window.ttServe.listeners.push(onProgress);
      button.disabled = true;
      form.setAttribute("aria-busy", "true");
      progress.hidden = false;
      progress.removeAttribute("value");
      lastStep = "";
      statusLine.textContent = "Working: regenerating the " + model.title + "…";
      var started = Date.now();
      fetch(api("regenerate"), { method: "POST", headers: headers, body: body, cache: "no-store" })
        .then(function (response) {
          return response.json().catch(function () { return { error: "HTTP " + response.status }; })
            .then(function (data) { return { ok: response.ok, data: data }; });
        })
        .then(function (answer) {
          if (!answer.ok) {
            finish();
            statusLine.textContent = "";
            setError(answer.data.error || "the regeneration failed", model.fields);
            return;
          }
          var seconds = answer.data.seconds || (Date.now() - started) / 1000;
          statusLine.textContent = "Regenerated in " + seconds.toFixed(1) + " s; reloading the page…";
          location.reload();
        })
        .catch(function () {
          finish();
          statusLine.textContent = "";
          setError("the server did not answer; is python -m transformer_trace serve still running?", model.fields);
        });
    });

    block.replaceWith(form);
  }

  function init() {
    if (!window.ttServe) return; // a static host: keep the CLI command
    var blocks = document.querySelectorAll(".tt-regenerate");
    if (!blocks.length) return;
    fetch(api("status"), { cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) {
        if (!status || status.app !== "transformer-trace") return;
        blocks.forEach(function (block) { if (block.isConnected) buildForm(block, status); });
      })
      .catch(function () { /* no server after all: keep the CLI command */ });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init); // Material: every page, instant navigation included
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
