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

  // The top bar. Wide screens: one row, the last sections under a "More" drop-down. Phones, and any width where
  // that row would not fit (long labels, a long address, a large font), fold everything behind the Menu button
  // (.nav-collapsed on <html>, see app.css). Both are real <button>s (Enter and Space work) that say their state
  // in aria-expanded; Escape closes the open one and gives the focus back to its button. Without this script
  // the sections stay visible inline.
  var root = document.documentElement;
  var topbar = document.querySelector(".topbar");
  var menuToggle = document.querySelector(".nav-toggle[aria-controls]");
  var menu = menuToggle ? document.getElementById(menuToggle.getAttribute("aria-controls")) : null;
  var moreToggle = document.querySelector(".nav-more-toggle[aria-controls]");
  var moreList = moreToggle ? document.getElementById(moreToggle.getAttribute("aria-controls")) : null;
  var phone = window.matchMedia("(max-width: 760px)");

  function setOpen(toggle, panel, open) {
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    panel.classList.toggle("is-open", open);
  }

  // Does the one-row bar fit? Measured uncollapsed (synchronously, so nothing is painted in between): the bar
  // does not wrap, so it fits when nothing overflows it.
  function fitBar() {
    if (!topbar || !menu) return;
    root.classList.remove("nav-collapsed");
    // Phones: app.css folds the bar by itself (a media query), so a resize never shows the wrong bar for a
    // frame; an open menu stays open (a phone's address bar resizes the page while scrolling).
    if (phone.matches) return;
    var collapse = topbar.scrollWidth > topbar.clientWidth + 1;
    if (!collapse && moreList) {
      var more = moreToggle.getBoundingClientRect();
      collapse = more.right > topbar.getBoundingClientRect().right;
    }
    root.classList.toggle("nav-collapsed", collapse);
    if (!collapse) setOpen(menuToggle, menu, false);
    else if (moreList) setOpen(moreToggle, moreList, false);
  }

  if (menuToggle && menu) {
    menuToggle.hidden = false;
    if (moreToggle && moreList) moreToggle.hidden = false;
    root.classList.add("has-menu-toggle");
    fitBar();
    var fitPending = false;
    window.addEventListener("resize", function () {
      if (fitPending) return;
      fitPending = true;
      window.requestAnimationFrame(function () { fitPending = false; fitBar(); });
    });
    // Web fonts or a late badge can change the bar's width after the first measure.
    window.addEventListener("load", fitBar);
    menuToggle.addEventListener("click", function () {
      setOpen(menuToggle, menu, menuToggle.getAttribute("aria-expanded") !== "true");
    });
  }
  if (moreToggle && moreList) {
    moreToggle.addEventListener("click", function () {
      var open = moreToggle.getAttribute("aria-expanded") !== "true";
      setOpen(moreToggle, moreList, open);
      if (open) {
        var first = moreList.querySelector("a");
        if (first) first.focus();
      }
    });
    // Arrow keys move between the menu's links; leaving the menu (focus or a click elsewhere) closes it.
    moreList.addEventListener("keydown", function (event) {
      if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
      var links = Array.prototype.slice.call(moreList.querySelectorAll("a"));
      var index = links.indexOf(document.activeElement);
      if (index < 0 || phone.matches || root.classList.contains("nav-collapsed")) return;
      event.preventDefault();
      links[(index + (event.key === "ArrowDown" ? 1 : links.length - 1)) % links.length].focus();
    });
    document.addEventListener("focusin", function (event) {
      if (moreToggle.getAttribute("aria-expanded") === "true" && !moreToggle.parentNode.contains(event.target)) {
        setOpen(moreToggle, moreList, false);
      }
    });
    document.addEventListener("click", function (event) {
      if (moreToggle.getAttribute("aria-expanded") === "true" && !moreToggle.parentNode.contains(event.target)) {
        setOpen(moreToggle, moreList, false);
      }
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    if (moreToggle && moreList && moreToggle.getAttribute("aria-expanded") === "true") {
      setOpen(moreToggle, moreList, false);
      moreToggle.focus();
    } else if (menuToggle && menu && menuToggle.getAttribute("aria-expanded") === "true") {
      setOpen(menuToggle, menu, false);
      menuToggle.focus();
    }
  });

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
