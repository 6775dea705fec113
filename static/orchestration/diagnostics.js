// The Diagnostics page: the list | detail splitter (drag or ← →, width remembered), keyboard navigation
// (j/k or ↓/↑ move the selection and load its detail, Enter opens, → ← open and close a group, Delete deletes
// the selected entry), confirmations before a delete, and what went wrong when the detail could not load.
(() => {
  "use strict";
  const WIDTH_KEY = "mailagent.diagnostics.listWidth";
  const MIN_LIST = 224; // px
  const MIN_DETAIL = 320; // px

  const split = () => document.getElementById("diag-split");
  const list = () => document.getElementById("diag-list");
  const detail = () => document.getElementById("diagnostics-detail");
  const status = (text) => {
    const box = document.getElementById("diag-status");
    if (box) box.textContent = text;
  };

  // --- splitter -------------------------------------------------------------------------------------

  function clampWidth(width) {
    const box = split();
    if (!box) return width;
    const max = Math.max(MIN_LIST, box.getBoundingClientRect().width - MIN_DETAIL);
    return Math.round(Math.min(Math.max(width, MIN_LIST), max));
  }

  function setWidth(width, remember) {
    const box = split();
    const handle = document.getElementById("diag-splitter");
    if (!box) return;
    const px = clampWidth(width);
    box.style.setProperty("--diag-list-width", `${px}px`);
    if (handle) {
      const total = box.getBoundingClientRect().width || 1;
      handle.setAttribute("aria-valuenow", String(Math.round((px / total) * 100)));
      handle.setAttribute("aria-valuemin", "0");
      handle.setAttribute("aria-valuemax", "100");
    }
    if (remember) {
      try {
        window.localStorage.setItem(WIDTH_KEY, String(px));
      } catch (error) {
        // storage refused (private mode, quota): the width just is not remembered
      }
    }
  }

  function listWidth() {
    const pane = list();
    return pane ? pane.getBoundingClientRect().width : MIN_LIST;
  }

  function initSplitter() {
    const box = split();
    const handle = document.getElementById("diag-splitter");
    if (!box || !handle) return;
    let saved = null;
    try {
      saved = window.localStorage.getItem(WIDTH_KEY);
    } catch (error) {
      saved = null;
    }
    if (saved && Number(saved) > 0) setWidth(Number(saved), false);
    else setWidth(listWidth(), false);

    let grab = 0; // where on the handle it was taken, so the list does not jump under the pointer
    handle.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      event.preventDefault();
      grab = event.clientX - box.getBoundingClientRect().left - listWidth();
      handle.setPointerCapture(event.pointerId);
      handle.classList.add("is-dragging");
      box.classList.add("is-resizing");
    });
    handle.addEventListener("pointermove", (event) => {
      if (!handle.hasPointerCapture(event.pointerId)) return;
      setWidth(event.clientX - box.getBoundingClientRect().left - grab, false);
    });
    const stop = (event) => {
      if (!handle.hasPointerCapture(event.pointerId)) return;
      handle.releasePointerCapture(event.pointerId);
      handle.classList.remove("is-dragging");
      box.classList.remove("is-resizing");
      setWidth(listWidth(), true);
    };
    handle.addEventListener("pointerup", stop);
    handle.addEventListener("pointercancel", stop);
    handle.addEventListener("keydown", (event) => {
      const step = event.shiftKey ? 96 : 24;
      if (event.key === "ArrowLeft") setWidth(listWidth() - step, true);
      else if (event.key === "ArrowRight") setWidth(listWidth() + step, true);
      else if (event.key === "Home") setWidth(MIN_LIST, true);
      else if (event.key === "End") setWidth(Number.MAX_SAFE_INTEGER, true);
      else return;
      event.preventDefault();
    });
    // A narrower window must not leave the detail pane squeezed below its minimum.
    window.addEventListener("resize", () => setWidth(listWidth(), false));
  }

  // --- selection and keyboard ----------------------------------------------------------------------

  // The links the user can see: not inside a closed group (a closed <details> renders no boxes).
  function visibleLinks() {
    const pane = list();
    if (!pane) return [];
    return Array.from(pane.querySelectorAll("a.diag-link")).filter((link) => link.getClientRects().length > 0);
  }

  function currentLink() {
    const pane = list();
    return pane ? pane.querySelector('a.diag-link[aria-current="true"]') : null;
  }

  function markSelected(nodeId) {
    const pane = list();
    if (!pane) return null;
    let found = null;
    pane.querySelectorAll("a.diag-link").forEach((link) => {
      const selected = link.dataset.node === nodeId;
      if (selected) {
        link.setAttribute("aria-current", "true");
        found = link;
      } else link.removeAttribute("aria-current");
    });
    return found;
  }

  let focusDetail = false;

  function open(link, { moveFocus = false } = {}) {
    markSelected(link.dataset.node);
    link.focus({ preventScroll: true });
    link.scrollIntoView({ block: "nearest" });
    focusDetail = moveFocus;
    link.click(); // htmx: GET the detail into the pane, replace the address (linkable)
  }

  function move(offset) {
    const links = visibleLinks();
    if (!links.length) return;
    const current = currentLink();
    let index = current ? links.indexOf(current) : -1;
    if (index === -1) index = offset > 0 ? -1 : links.length;
    const next = links[Math.min(Math.max(index + offset, 0), links.length - 1)];
    if (next && next !== current) open(next);
  }

  const typing = (target) =>
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) && target.type !== "checkbox");

  function groupOf(link) {
    const summary = link.parentElement;
    return summary && summary.tagName === "SUMMARY" ? summary.parentElement : null;
  }

  function deleteSelected() {
    const form = document.getElementById("diag-delete-entry");
    const current = currentLink();
    if (!form || !current || !current.dataset.node.startsWith("log:")) {
      status("Select an entry first: Delete removes the selected diagnostics entry.");
      return;
    }
    // Where the selection goes once it is gone: the next entry, else the one before it.
    const links = visibleLinks().filter((link) => link.dataset.node.startsWith("log:"));
    const index = links.indexOf(current);
    const then = links[index + 1] || links[index - 1] || null;
    const field = form.querySelector("input[name=then]");
    if (field) field.value = then ? then.dataset.node : "";
    form.requestSubmit();
  }

  document.addEventListener("keydown", (event) => {
    if (!list() || event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    const inList = list().contains(document.activeElement);
    const key = event.key;
    if (key === "j" || (key === "ArrowDown" && inList)) move(1);
    else if (key === "k" || (key === "ArrowUp" && inList)) move(-1);
    else if (key === "Enter" && inList && document.activeElement.matches("a.diag-link")) {
      const link = document.activeElement;
      const group = groupOf(link);
      if (group) group.open = true;
      open(link, { moveFocus: true });
    } else if ((key === "ArrowRight" || key === "ArrowLeft") && inList && document.activeElement.matches("a.diag-link")) {
      const group = groupOf(document.activeElement);
      if (!group) return;
      group.open = key === "ArrowRight";
    } else if (key === "Delete") {
      if (document.activeElement && document.activeElement.id === "diag-splitter") return;
      deleteSelected();
    } else return;
    event.preventDefault();
  });

  // A click on a link (mouse, or open() above) marks it selected at once, before the detail arrives.
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("#diag-list a.diag-link") : null;
    if (link) {
      markSelected(link.dataset.node);
      status("");
    }
  });

  // --- deletes: a confirmation first -----------------------------------------------------------------

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const submitter = event.submitter;
    let question = form.dataset.confirm || (submitter && submitter.dataset.confirm) || "";
    if (form.id === "diag-bulk" && submitter && submitter.value === "selected") {
      const ticked = document.querySelectorAll('input.diag-check[form="diag-bulk"]:checked').length;
      if (!ticked) {
        event.preventDefault();
        status("Nothing selected: tick the entries to delete first (or use Delete all shown).");
        return;
      }
      question = `Delete the ${ticked} selected entr${ticked === 1 ? "y" : "ies"}? Runs, transcripts and results stay.`;
    }
    if (question && !window.confirm(question)) event.preventDefault();
  });

  function updateSelectedCount() {
    const button = document.querySelector('[data-testid="delete-selected"]');
    if (!button) return;
    const ticked = document.querySelectorAll('input.diag-check[form="diag-bulk"]:checked').length;
    button.textContent = ticked ? `Delete selected (${ticked})` : "Delete selected";
  }
  document.addEventListener("change", (event) => {
    if (event.target instanceof Element && event.target.matches("input.diag-check")) {
      updateSelectedCount();
      status("");
    }
  });

  // --- the detail pane: keep the selection in step, say what went wrong -------------------------------

  document.addEventListener("htmx:afterSwap", (event) => {
    const pane = detail();
    if (!pane || event.detail.target !== pane) return;
    const body = pane.querySelector("[data-node]");
    if (body) markSelected(body.dataset.node);
    if (focusDetail) {
      const title = pane.querySelector("#diag-detail-title");
      if (title) title.focus();
      focusDetail = false;
    }
  });

  function showError(text) {
    const pane = detail();
    if (!pane) return;
    const box = document.createElement("div");
    box.className = "alert alert-error";
    box.setAttribute("role", "alert");
    box.dataset.testid = "diagnostics-load-error";
    box.textContent = text;
    pane.replaceChildren(box);
  }

  document.addEventListener("htmx:responseError", (event) => {
    if (event.detail.target !== detail()) return;
    const xhr = event.detail.xhr;
    const answer = xhr ? `${xhr.status} ${xhr.statusText}`.trim() : "an error";
    showError(`Could not load this entry: the server answered ${answer}. Reload the page and try again.`);
  });
  document.addEventListener("htmx:sendError", (event) => {
    if (event.detail.target !== detail()) return;
    showError("Could not reach the server to load this entry (offline, or the server is restarting). Try again.");
  });

  function init() {
    initSplitter();
    const current = currentLink();
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
