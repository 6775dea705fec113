// Setup wizard and settings pages: provider presets on the model form, a default director name from the
// chosen template, and reorderable lists ([data-sortable]: drag and drop, or Alt+ArrowUp/Down on a handle).
(function () {
  "use strict";

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function initProviderPresets(form) {
    var select = form.querySelector("select[name=provider]");
    var urls = document.getElementById("provider-urls");
    if (!select || !urls) return;
    var presets = JSON.parse(urls.textContent || "{}");
    var names = { openai: "OpenAI", azure: "Azure OpenAI", ollama: "Ollama", custom: "My model server" };
    var baseUrl = form.querySelector("input[name=base_url]");
    var name = form.querySelector("input[name=name]");
    select.addEventListener("change", function () {
      var known = Object.keys(presets).map(function (k) { return presets[k]; });
      if (baseUrl && (baseUrl.value === "" || known.indexOf(baseUrl.value) !== -1)) {
        baseUrl.value = presets[select.value] || "";
        baseUrl.placeholder = select.value === "azure" ? "https://<resource>.openai.azure.com/openai/v1/" : "";
      }
      var knownNames = Object.keys(names).map(function (k) { return names[k]; });
      if (name && (name.value === "" || knownNames.indexOf(name.value) !== -1)) name.value = names[select.value] || "";
    });
  }

  // A base URL on this machine or the local network (typed, or from the Ollama preset) usually means the
  // user's own hardware, often a CPU: fields still at the generic defaults take the local ones the server put
  // on them (data-local-default, apps/setup/forms.py), and go back when the URL leaves. A field the user set is
  // never touched again. The same rule as apps.llm.discovery.is_local_url.
  function isLocal(url) {
    var match = /^[a-z]+:\/\/(\[[^\]]*\]|[^\/:?#]*)/i.exec((url || "").trim());
    if (!match) return false;
    var host = match[1].toLowerCase();
    if (host === "localhost" || host === "host.docker.internal" || /\.(localhost|local)$/.test(host)) return true;
    if (host === "[::1]" || /^\[f[cd][0-9a-f]{2}:/.test(host)) return true;
    var ip = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(host);
    if (!ip) return false;
    var a = Number(ip[1]), b = Number(ip[2]);
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
  }

  function initLocalDefaults(form) {
    var baseUrl = form.querySelector("input[name=base_url]");
    var fields = form.querySelectorAll("[data-local-default]");
    var note = form.querySelector("[data-local-defaults-note]");
    if (!baseUrl || !fields.length) return;
    // Setting .value fires no event: an input/change event on one of these fields is the user's own choice.
    fields.forEach(function (field) {
      var mark = function () { field.setAttribute("data-user-set", ""); };
      field.addEventListener("input", mark);
      field.addEventListener("change", mark);
    });
    function apply() {
      var local = isLocal(baseUrl.value);
      var changed = false;
      fields.forEach(function (field) {
        if (field.hasAttribute("data-user-set")) return;
        var from = field.getAttribute(local ? "data-generic-default" : "data-local-default");
        var to = field.getAttribute(local ? "data-local-default" : "data-generic-default");
        if (field.value === from && from !== to) { field.value = to; changed = true; }
      });
      if (note && changed) note.hidden = !local;
    }
    baseUrl.addEventListener("change", apply);
    baseUrl.addEventListener("input", apply);
    var select = form.querySelector("select[name=provider]");
    if (select) select.addEventListener("change", function () { setTimeout(apply, 0); });
  }

  function initTemplateNames(form) {
    var name = form.querySelector("input[name=name]");
    if (!name) return;
    var defaults = Array.prototype.map.call(form.querySelectorAll("input[data-default-name]"), function (r) {
      return r.getAttribute("data-default-name");
    });
    form.querySelectorAll("input[data-default-name]").forEach(function (radio) {
      radio.addEventListener("change", function () {
        if (name.value === "" || defaults.indexOf(name.value) !== -1) name.value = radio.getAttribute("data-default-name");
      });
    });
    var checked = form.querySelector("input[data-default-name]:checked");
    if (checked && name.value === "") name.value = checked.getAttribute("data-default-name");
  }

  function saveOrder(list) {
    var body = new URLSearchParams();
    list.querySelectorAll(":scope > [data-id]").forEach(function (item) { body.append("order", item.getAttribute("data-id")); });
    list.setAttribute("aria-busy", "true");
    fetch(list.getAttribute("data-order-url"), {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken(), "HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded" },
      body: body.toString(),
      credentials: "same-origin",
    }).then(function (response) {
      list.removeAttribute("aria-busy");
      if (!response.ok) throw new Error("HTTP " + response.status);
      list.setAttribute("data-saved", String(Date.now()));
      refreshMoveButtons(list);
    }).catch(function (error) {
      list.removeAttribute("aria-busy");
      var note = document.createElement("p");
      note.className = "field-error";
      note.setAttribute("role", "alert");
      note.textContent = "The new order was not saved (" + error.message + "). Reload the page and try again.";
      list.after(note);
    });
  }

  function refreshMoveButtons(list) {
    var items = list.querySelectorAll(":scope > [data-id]");
    items.forEach(function (item, index) {
      var up = item.querySelector("button[value=up]");
      var down = item.querySelector("button[value=down]");
      if (up) up.disabled = index === 0;
      if (down) down.disabled = index === items.length - 1;
    });
  }

  function initSortable(list) {
    var dragged = null;
    list.addEventListener("dragstart", function (event) {
      dragged = event.target.closest("[data-id]");
      if (!dragged) return;
      dragged.classList.add("is-dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", dragged.getAttribute("data-id"));
    });
    list.addEventListener("dragover", function (event) {
      if (!dragged) return;
      event.preventDefault();
      var over = event.target.closest("[data-id]");
      if (!over || over === dragged || over.parentNode !== list) return;
      var rect = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY > rect.top + rect.height / 2 ? over.nextSibling : over);
    });
    list.addEventListener("drop", function (event) { event.preventDefault(); });
    list.addEventListener("dragend", function () {
      if (!dragged) return;
      dragged.classList.remove("is-dragging");
      dragged = null;
      saveOrder(list);
    });
    list.addEventListener("keydown", function (event) {
      if (!event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      var handle = event.target.closest(".drag-handle");
      var item = handle && handle.closest("[data-id]");
      if (!item) return;
      event.preventDefault();
      var sibling = event.key === "ArrowUp" ? item.previousElementSibling : item.nextElementSibling;
      if (!sibling || !sibling.hasAttribute("data-id")) return;
      list.insertBefore(item, event.key === "ArrowUp" ? sibling : sibling.nextSibling);
      handle.focus();
      saveOrder(list);
    });
  }

  // Deleting a director, an agent or a model asks first (its runs or its users' settings go with it).
  function initConfirm(form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  }

  function init(root) {
    root.querySelectorAll("form[data-confirm]").forEach(initConfirm);
    root.querySelectorAll(".api-config-form").forEach(initProviderPresets);
    root.querySelectorAll(".api-config-form").forEach(initLocalDefaults);
    root.querySelectorAll("[data-testid=template-form]").forEach(initTemplateNames);
    root.querySelectorAll("[data-sortable]").forEach(initSortable);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
})();
