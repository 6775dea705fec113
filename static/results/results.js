// The Results page: keyboard navigation of the tree (roving focus; ↑ ↓ move, → ← open and close, Home/End,
// Enter shows the node), the active node (highlight + the "Delete active" target), collapsed branches, ticked
// boxes and the keyboard focus kept across live refreshes, copy to clipboard, the original-email toggle, and
// live updates from notifications.
(() => {
  "use strict";
  const collapsed = new Set();
  const tree = () => document.getElementById("results-tree");
  const activeInput = () => document.getElementById("results-active");

  function visibleLinks() {
    const root = tree();
    if (!root) return [];
    return Array.from(root.querySelectorAll(".rtree-link")).filter((link) => {
      const item = link.closest("[role=treeitem]");
      let parent = item && item.parentElement ? item.parentElement.closest("[role=treeitem]") : null;
      while (parent) {
        if (parent.getAttribute("aria-expanded") === "false") return false;
        parent = parent.parentElement ? parent.parentElement.closest("[role=treeitem]") : null;
      }
      return true;
    });
  }

  function setRovingFocus(target) {
    const links = visibleLinks();
    links.forEach((link) => link.setAttribute("tabindex", link === target ? "0" : "-1"));
    if (target === null && links.length) links[0].setAttribute("tabindex", "0");
  }

  function markActive(node) {
    const input = activeInput();
    if (input) input.value = node || "";
    const root = tree();
    if (!root) return;
    let current = null;
    root.querySelectorAll("[role=treeitem]").forEach((item) => {
      const selected = item.dataset.node === node;
      item.setAttribute("aria-selected", selected ? "true" : "false");
      if (selected) current = item.querySelector(":scope > .rtree-row .rtree-link");
    });
    setRovingFocus(current);
    return current;
  }

  function setExpanded(item, expanded) {
    if (!item || !item.querySelector(":scope > ul[role=group]")) return;
    item.setAttribute("aria-expanded", expanded ? "true" : "false");
    if (expanded) collapsed.delete(item.dataset.node);
    else collapsed.add(item.dataset.node);
  }

  // What a refresh of the tree would lose: the focused node (and whether its box or its link had the focus)
  // and the ticked boxes. Read just before the swap, put back right after it.
  let kept = null;

  function rememberTree() {
    const root = tree();
    if (!root) return;
    const focused = document.activeElement;
    const item = focused && root.contains(focused) ? focused.closest("[role=treeitem]") : null;
    kept = {
      focusNode: item ? item.dataset.node : null,
      focusBox: Boolean(item && focused.matches("input[type=checkbox]")),
      ticked: new Set(Array.from(root.querySelectorAll("input[name=node]:checked"), (box) => box.value)),
    };
  }

  function restoreTree() {
    const root = tree();
    if (!root) return;
    root.querySelectorAll("[role=treeitem]").forEach((item) => {
      if (collapsed.has(item.dataset.node)) item.setAttribute("aria-expanded", "false");
    });
    const before = kept;
    kept = null;
    if (before) {
      root.querySelectorAll("input[name=node]").forEach((box) => {
        if (before.ticked.has(box.value)) box.checked = true;
      });
    }
    const active = markActive(activeInput() ? activeInput().value : "");
    if (!before || !before.focusNode) return;
    const item = Array.from(root.querySelectorAll("[role=treeitem]")).find((el) => el.dataset.node === before.focusNode);
    const row = item ? item.querySelector(":scope > .rtree-row") : null;
    // The focused node is gone (deleted): the active node, else the first one, keeps the focus in the tree.
    const link = row ? row.querySelector(".rtree-link") : active || visibleLinks()[0] || null;
    const target = row && before.focusBox ? row.querySelector("input[type=checkbox]") : link;
    if (link) setRovingFocus(link);
    if (target) target.focus({ preventScroll: true });
  }

  // "Show older emails" appends a page to the list: the keyboard focus moves to its first email (the button
  // it was on is replaced), so Tab/arrow navigation continues where the new emails begin.
  let emailsBefore = null;
  const emailItems = (list) => Array.from(list.children).filter((el) => el.matches("[role=treeitem]"));

  // Two kinds of refresh. Refresh and a delete/restore re-read every loaded page (`through` = the last loaded
  // email); if "Show older emails" appended a page meanwhile, that answer would drop it, so it is discarded and
  // asked again. The live ones (the poller, a notification: elements with data-live-refresh) re-read only down to
  // the end of the first page (`through` = #results-top) and keep the older pages as shown, minus the emails the
  // answer brought to the top: a refresh every few seconds stays one page of work however many pages are open.
  const sentThrough = (detail) =>
    detail.xhr && detail.xhr.responseURL ? new URL(detail.xhr.responseURL).searchParams.get("through") : null;

  function cursorKey(raw) {
    const [micros, id] = String(raw || "").split(".");
    return [Number(micros) || 0, Number(id) || 0];
  }

  const isOlder = (a, b) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const isLive = (detail) => {
    const elt = detail.requestConfig ? detail.requestConfig.elt : null;
    return Boolean(elt && elt.hasAttribute("data-live-refresh"));
  };
  let keptOlder = null;

  function staleRefresh(detail) {
    const current = document.getElementById("results-through");
    const sent = sentThrough(detail);
    // No `through` at all: a filter change, which starts from the newest page on purpose.
    return Boolean(current) && sent !== null && sent !== current.value;
  }

  function keepOlderPages(detail) {
    const sent = sentThrough(detail);
    const list = document.getElementById("results-tree-list");
    keptOlder = null;
    if (!sent || !list) return;
    const top = cursorKey(sent);
    const items = emailItems(list).filter((li) => isOlder(cursorKey(li.dataset.cursor), top));
    if (items.length) keptOlder = { items, more: document.getElementById("results-more") };
  }

  function putBackOlderPages() {
    const kept = keptOlder;
    keptOlder = null;
    const list = document.getElementById("results-tree-list");
    if (!kept || !list) return;
    const present = new Set(emailItems(list).map((li) => li.dataset.node));
    kept.items.forEach((li) => {
      if (present.has(li.dataset.node)) return; // it moved up: the answer shows it at the top
      list.appendChild(li);
      if (window.htmx) window.htmx.process(li);
    });
    const more = document.getElementById("results-more");
    if (more && kept.more) {
      more.replaceWith(kept.more);
      if (window.htmx) window.htmx.process(kept.more);
    }
  }

  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.target === tree() && event.detail.isError === false) {
      if (isLive(event.detail)) keepOlderPages(event.detail);
      else if (staleRefresh(event.detail)) {
        event.detail.shouldSwap = false;
        if (window.htmx) window.htmx.trigger(document.body, "results-changed");
        return;
      }
    }
    if (event.detail.target === tree()) rememberTree();
    if (event.detail.target && event.detail.target.id === "results-tree-list") {
      emailsBefore = emailItems(event.detail.target).length;
    }
  });

  document.addEventListener("keydown", (event) => {
    const link = event.target.closest ? event.target.closest(".rtree-link") : null;
    if (!link || !tree() || !tree().contains(link)) return;
    const links = visibleLinks();
    const index = links.indexOf(link);
    const item = link.closest("[role=treeitem]");
    let next = null;
    switch (event.key) {
      case "ArrowDown":
        next = links[index + 1];
        break;
      case "ArrowUp":
        next = links[index - 1];
        break;
      case "Home":
        next = links[0];
        break;
      case "End":
        next = links[links.length - 1];
        break;
      case "ArrowRight":
        if (item.getAttribute("aria-expanded") === "false") setExpanded(item, true);
        else if (item.getAttribute("aria-expanded") === "true") next = links[index + 1];
        break;
      case "ArrowLeft":
        if (item.getAttribute("aria-expanded") === "true") setExpanded(item, false);
        else {
          const parent = item.parentElement.closest("[role=treeitem]");
          if (parent) next = parent.querySelector(":scope > .rtree-row .rtree-link");
        }
        break;
      case " ":
        link.click();
        break;
      default:
        return;
    }
    event.preventDefault();
    if (next) {
      setRovingFocus(next);
      next.focus();
    }
  });

  document.addEventListener("click", (event) => {
    const twisty = event.target.closest(".rtree-twisty");
    if (twisty) {
      const item = twisty.closest("[role=treeitem]");
      setExpanded(item, item.getAttribute("aria-expanded") === "false");
      return;
    }
    const link = event.target.closest(".rtree-link");
    if (link) {
      markActive(link.closest("[role=treeitem]").dataset.node);
      return;
    }
    const toggle = event.target.closest("[data-toggle]");
    if (toggle) {
      const panel = document.getElementById(toggle.dataset.toggle);
      if (panel) {
        panel.hidden = !panel.hidden;
        toggle.setAttribute("aria-expanded", panel.hidden ? "false" : "true");
      }
      return;
    }
    const copy = event.target.closest("[data-copy]");
    if (copy) {
      copyItem(copy);
      return;
    }
    if (event.target.closest("[data-cancel-delete]")) {
      const node = activeInput() ? activeInput().value : "";
      const current = node ? markActive(node) : null;
      if (current) current.click();
      else document.getElementById("results-pane").replaceChildren();
    }
  });

  async function copyItem(button) {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(source.value);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Copy failed: the browser refused the clipboard";
    }
    window.setTimeout(() => {
      button.textContent = label;
    }, 2000);
  }

  // Pane loads from links outside the tree (cards, provenance) also move the highlight.
  document.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target === tree()) {
      putBackOlderPages();
      restoreTree();
      return;
    }
    if (event.detail.target && event.detail.target.id === "results-tree-list" && emailsBefore !== null) {
      const first = emailItems(event.detail.target)[emailsBefore];
      emailsBefore = null;
      const link = first ? first.querySelector(":scope > .rtree-row .rtree-link") : null;
      if (link) {
        setRovingFocus(link);
        link.focus();
      } else {
        markActive(activeInput() ? activeInput().value : "");
      }
      return;
    }
    if (event.detail.target && event.detail.target.id === "results-pane") {
      const node = event.detail.target.querySelector("[data-node]");
      if (node) markActive(node.dataset.node);
      // An answer that changed the tree (a restore) asks for a refresh.
      if (event.detail.target.querySelector("[data-refresh-tree]") && window.htmx) {
        window.htmx.trigger(document.body, "results-changed");
      }
    }
  });

  // Live: a finished run or a new Inbox entry refreshes the tree in place (the first page; see above).
  document.addEventListener("mailagent:result", () => {
    if (tree() && window.htmx) window.htmx.trigger(document.body, "results-live");
  });

  // A clicked notification: show its node (from the server if the tree has not caught up yet).
  document.addEventListener("mailagent:focus-node", (event) => {
    const link = markActive(event.detail.node);
    if (link) {
      link.click();
      link.focus();
    } else {
      window.location.assign(event.detail.url);
    }
  });

  document.addEventListener("DOMContentLoaded", () => {
    const current = markActive(activeInput() ? activeInput().value : "");
    if (current) current.scrollIntoView({ block: "nearest" });
  });
})();
