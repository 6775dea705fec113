// Page behaviour that used to sit in inline handlers and <script> blocks, moved here so the
// Content-Security-Policy can forbid inline script (script-src 'self' plus a per-response nonce).
(function () {
  "use strict";

  // Runs (deferred, after htmx) before htmx initialises on DOMContentLoaded: no injected <style> element
  // (app.css carries the indicator styles) and no eval of attribute code, both of which the CSP forbids.
  if (window.htmx) {
    window.htmx.config.includeIndicatorStyles = false;
    window.htmx.config.allowEval = false;
  }

  // The Inbox sidebar's polls carry the entry being read, so the refreshed list keeps it selected.
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.elt && event.detail.elt.id === "inbox-sidebar" && typeof window.inboxSelected === "function") {
      event.detail.parameters.entry = window.inboxSelected() || "";
    }
  });

  // <form data-confirm="Delete this filter?">: ask before submitting.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  }, true);

  // <input data-shortcut="l">: pressing that key anywhere but in a field focuses the input (the thread page's
  // "Add tag", as in Gmail's `l`). Modifier keys are left to the browser.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.key.length !== 1) return;
    var active = document.activeElement;
    if (active && (active.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName))) return;
    var target = document.querySelector('[data-shortcut="' + event.key.replace(/["\\]/g, "") + '"]');
    if (!target) return;
    event.preventDefault();
    target.focus();
  });

  // <textarea data-submit-on-enter>: Enter sends the form, Shift+Enter starts a new line.
  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (!(field instanceof HTMLTextAreaElement) || !field.hasAttribute("data-submit-on-enter")) return;
    if (event.key === "Enter" && !event.shiftKey && field.form) {
      event.preventDefault();
      field.form.requestSubmit();
    }
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var element = event.detail.elt;
    if (!element || !element.hasAttribute) return;
    // <form data-clear-on-success=".ask-empty">: after a successful request empty its textarea and remove
    // the elements the selector names (an empty-state message).
    if (element.hasAttribute("data-clear-on-success")) {
      if (!event.detail.successful) return;
      var textarea = element.querySelector("textarea");
      if (textarea) textarea.value = "";
      var selector = element.getAttribute("data-clear-on-success");
      if (selector) document.querySelectorAll(selector).forEach(function (node) { node.remove(); });
      return;
    }
    // "Test connection" buttons (data-connection-test="<result element id>"): the JSON answer of
    // GET /api/accounts/<id>/test becomes a badge and, with an authorizeUrl, a "Re-authenticate" link.
    if (element.hasAttribute("data-connection-test")) showConnectionTest(element, event.detail.xhr);
  });

  function safeUrl(value) {
    return typeof value === "string" && (/^https?:\/\//i.test(value) || /^\/(?!\/)/.test(value));
  }

  function showConnectionTest(button, xhr) {
    var target = document.getElementById(button.getAttribute("data-connection-test"));
    if (!target) return;
    var labelsNode = document.getElementById("connection-error-labels");
    var labels = labelsNode ? JSON.parse(labelsNode.textContent) : {};
    var data = null;
    try { data = JSON.parse(xhr.responseText); } catch (error) { data = null; }
    target.replaceChildren();
    var badge = document.createElement("span");
    if (data && data.ok === true) {
      badge.className = "badge ok";
      badge.textContent = "Connection OK";
      target.append(badge);
      return;
    }
    var category = data && data.error ? String(data.error) : "HTTP " + xhr.status;
    badge.className = "badge error";
    badge.textContent = "Failed: " + (labels[category] || category);
    target.append(badge);
    if (data && data.message) {
      // The specific cause (host, port, the server's words), as a failed sync records it.
      var detail = document.createElement("span");
      detail.className = "connection-detail";
      detail.textContent = " " + String(data.message);
      target.append(detail);
    }
    if (data && safeUrl(data.authorizeUrl)) {
      var link = document.createElement("a");
      link.href = data.authorizeUrl;
      link.className = "button small";
      link.textContent = "Re-authenticate";
      target.append(" ", link);
    }
  }

  // The top bar's menu button (narrow screens, see app.css): shows and hides the sections and the session.
  // A real <button>, so Enter and Space work; aria-expanded tells assistive technology; Escape closes the
  // menu and gives the focus back to the button. Without this script the sections stay visible inline.
  var menuToggle = document.querySelector(".nav-toggle[aria-controls]");
  var menu = menuToggle ? document.getElementById(menuToggle.getAttribute("aria-controls")) : null;
  if (menuToggle && menu) {
    var setMenuOpen = function (open) {
      menuToggle.setAttribute("aria-expanded", open ? "true" : "false");
      menu.classList.toggle("is-open", open);
    };
    menuToggle.hidden = false;
    document.documentElement.classList.add("has-menu-toggle");
    menuToggle.addEventListener("click", function () {
      setMenuOpen(menuToggle.getAttribute("aria-expanded") !== "true");
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && menuToggle.getAttribute("aria-expanded") === "true") {
        setMenuOpen(false);
        menuToggle.focus();
      }
    });
  }

  // Tables become stacked cards on narrow screens (app.css): each cell shows its column's header, taken
  // from <thead> into a data-label attribute here (templates may set their own), also after htmx swaps.
  function labelTableCells(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var tables = Array.prototype.slice.call(scope.querySelectorAll("table.table"));
    var enclosing = scope.closest ? scope.closest("table.table") : null;  // rows swapped into a table
    if (enclosing) tables.push(enclosing);
    tables.forEach(function (table) {
      var headRow = table.tHead && table.tHead.rows[0];
      if (!headRow) return;
      var labels = [];
      Array.prototype.forEach.call(headRow.cells, function (cell) {
        var text = cell.textContent.replace(/\s+/g, " ").trim();
        for (var span = 0; span < (cell.colSpan || 1); span++) labels.push(text);
      });
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (row) {
          var column = 0;
          Array.prototype.forEach.call(row.cells, function (cell) {
            if (!cell.hasAttribute("data-label") && labels[column]) cell.setAttribute("data-label", labels[column]);
            column += cell.colSpan || 1;
          });
        });
      });
    });
  }
  labelTableCells(document);
  document.addEventListener("htmx:afterSettle", function (event) { labelTableCells(event.detail.elt); });
})();
