// Inbox page: selection, Delete key with undo, live refresh (websocket when Redis is configured, else the
// sidebar's 20 s poll) and browser notifications for new entries once the user allowed them.
(function () {
  "use strict";
  const UNDO_MS = 5000;
  const root = document.getElementById("inbox");
  if (!root) return;
  let pending = null; // {id, row, timer}
  let selected = new URLSearchParams(location.search).get("entry") || "";
  window.inboxSelected = () => selected;

  function markSelected() {
    root.querySelectorAll(".inbox-row").forEach((row) => {
      row.classList.toggle("is-selected", row.dataset.entryId === selected);
      if (pending && row.dataset.entryId === pending.id) row.hidden = true;
    });
  }

  function sendDelete(id, keepalive) {
    return fetch(root.dataset.api + id, {
      method: "DELETE",
      headers: { "X-CSRFToken": root.dataset.csrf },
      credentials: "same-origin",
      keepalive: !!keepalive,
    });
  }

  function finish(keepalive) {
    if (!pending) return;
    const { id, row, timer } = pending;
    clearTimeout(timer);
    pending = null;
    document.getElementById("inbox-toast").hidden = true;
    sendDelete(id, keepalive).then((response) => {
      if (response.ok || response.status === 404) {
        row.remove();
        document.body.dispatchEvent(new Event("inbox-changed"));
      } else {
        row.hidden = false;
        alert("The entry could not be deleted (" + response.status + "). Try again.");
      }
    });
  }

  function remove(id) {
    const row = document.getElementById("row-" + id);
    if (!row) return;
    finish(false);
    row.hidden = true;
    if (selected === id) {
      selected = "";
      document.getElementById("inbox-detail").innerHTML =
        '<p class="muted inbox-placeholder">Entry deleted. Select another entry to read it.</p>';
      history.replaceState(null, "", location.pathname);
    }
    const undoMs = Number(root.dataset.undoMs) || UNDO_MS;
    pending = { id, row, timer: setTimeout(() => finish(false), undoMs) };
    document.getElementById("inbox-toast").hidden = false;
  }

  document.getElementById("inbox-undo").addEventListener("click", () => {
    if (!pending) return;
    clearTimeout(pending.timer);
    pending.row.hidden = false;
    pending = null;
    document.getElementById("inbox-toast").hidden = true;
  });
  window.addEventListener("pagehide", () => finish(true));

  root.addEventListener("click", (event) => {
    const trash = event.target.closest("[data-action=delete]");
    if (trash) {
      event.preventDefault();
      remove(trash.closest(".inbox-row").dataset.entryId);
      return;
    }
    const link = event.target.closest(".inbox-row-link");
    if (link) {
      selected = link.closest(".inbox-row").dataset.entryId;
      markSelected();
    }
  });

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Delete" || !selected) return;
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || event.target.isContentEditable) return;
    event.preventDefault();
    remove(selected);
  });

  // New entries: notify when the newest timestamp grows after a refresh.
  let newest = Number((document.getElementById("inbox-sidebar") || {}).dataset?.newestTs || 0);
  document.body.addEventListener("htmx:afterSwap", () => {
    markSelected();
    const sidebar = document.getElementById("inbox-sidebar");
    if (!sidebar) return;
    const ts = Number(sidebar.dataset.newestTs || 0);
    if (ts > newest && newest && "Notification" in window && Notification.permission === "granted") {
      const first = sidebar.querySelector(".inbox-row");
      const label = first ? first.querySelector(".inbox-row-label").textContent : "Inbox";
      new Notification("New in your Inbox: " + label, { tag: "mailagent-inbox" });
    }
    newest = Math.max(newest, ts);
  });

  const notify = document.getElementById("inbox-notify");
  if ("Notification" in window && Notification.permission === "default") {
    notify.hidden = false;
    notify.addEventListener("click", () => Notification.requestPermission().then(() => (notify.hidden = true)));
  }

  // With Redis the server pushes inbox events; the sidebar refreshes on them.
  if (root.dataset.ws) {
    const connect = () => {
      const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + root.dataset.ws);
      socket.onmessage = (message) => {
        const event = JSON.parse(message.data);
        if (String(event.type || "").startsWith("inbox_")) document.body.dispatchEvent(new Event("inbox-changed"));
      };
      socket.onclose = () => setTimeout(connect, 5000);
    };
    connect();
  }
})();
