// Notifications of finished work on every page: the /ws/notifications/ socket pushes typed events
// (run_completed, run_failed, inbox_pushed); a poll of the events endpoint rebuilds the same events from
// the database, because an in-memory channel layer does not carry a push from a qcluster worker to this
// web process. Each event is handled once (by id, shared between tabs through localStorage): pages hear it
// as a `mailagent:result` DOM event, and the browser shows a Notification when the user allowed it.
(() => {
  "use strict";
  const script = document.currentScript;
  if (!script) return;
  const config = script.dataset;
  const KINDS = new Set(["run_completed", "run_failed", "inbox_pushed"]);
  const CURSOR_KEY = "mailagent.notify.cursor";
  const SEEN_KEY = "mailagent.notify.seen";
  const MAX_CURSOR_AGE_MS = 60 * 60 * 1000;
  // Without a shared channel layer the database is the only path from a worker: poll often. With one, the
  // socket carries events and the poll only catches what a reconnect missed.
  const POLL_MS = config.sharedLayer === "1" ? 60000 : 5000;
  let preference = { browserNotifications: false, promptDismissed: true };
  let socket = null;
  let socketDelay = 1000;
  let polling = false;
  const heardHere = new Set(); // per tab: every open page hears each event once

  const storage = {
    get(key, fallback) {
      try {
        const raw = window.localStorage.getItem(key);
        return raw === null ? fallback : JSON.parse(raw);
      } catch (error) {
        return fallback;
      }
    },
    set(key, value) {
      try {
        window.localStorage.setItem(key, JSON.stringify(value));
      } catch (error) {
        /* private mode: events are still shown, only not shared between tabs */
      }
    },
  };

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function firstTime(id) {
    const seen = storage.get(SEEN_KEY, []);
    if (seen.includes(id)) return false;
    seen.push(id);
    storage.set(SEEN_KEY, seen.slice(-300));
    return true;
  }

  function focusNode(event) {
    window.focus();
    const onResults = window.location.pathname === config.resultsUrl;
    if (onResults && event.node) {
      document.dispatchEvent(new CustomEvent("mailagent:focus-node", { detail: event }));
    } else {
      window.location.assign(event.url);
    }
  }

  function showNotification(event) {
    if (!preference.browserNotifications || !("Notification" in window)) return;
    if (Notification.permission !== "granted") return;
    try {
      const notification = new Notification(event.title, { body: event.body, tag: event.id });
      notification.addEventListener("click", () => {
        focusNode(event);
        notification.close();
      });
    } catch (error) {
      /* some browsers only allow notifications from a service worker: the page event still fires */
    }
  }

  function handle(event) {
    if (!event || !KINDS.has(event.type) || !event.id) return;
    if (!heardHere.has(event.id)) {
      heardHere.add(event.id);
      document.dispatchEvent(new CustomEvent("mailagent:result", { detail: event }));
    }
    if (firstTime(event.id)) showNotification(event);
  }

  function cursor() {
    const stored = storage.get(CURSOR_KEY, null);
    if (!stored || Date.now() - stored.savedAt > MAX_CURSOR_AGE_MS) return null;
    return stored.cursor;
  }

  async function poll() {
    if (polling) return;
    polling = true;
    try {
      const since = cursor();
      const url = config.eventsUrl + (since ? "?since=" + encodeURIComponent(since) : "");
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) return;
      const body = await response.json();
      preference = { browserNotifications: body.browserNotifications, promptDismissed: body.promptDismissed };
      storage.set(CURSOR_KEY, { cursor: body.cursor, savedAt: Date.now() });
      (body.known || []).forEach((id) => {
        heardHere.add(id);
        firstTime(id);
      });
      (body.events || []).forEach(handle);
      offerPermission();
      describePermission();
    } catch (error) {
      /* offline or signed out: the next poll tries again */
    } finally {
      polling = false;
    }
  }

  function connect() {
    if (!("WebSocket" in window)) return;
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + config.socketPath);
    socket.addEventListener("open", () => {
      socketDelay = 1000;
      poll(); // whatever finished while the socket was down
    });
    socket.addEventListener("message", (message) => {
      try {
        handle(JSON.parse(message.data));
      } catch (error) {
        /* not one of ours */
      }
    });
    socket.addEventListener("close", (closed) => {
      if (closed.code === 4401) return; // signed out
      window.setTimeout(connect, socketDelay);
      socketDelay = Math.min(socketDelay * 2, 60000);
    });
  }

  async function savePreference(fields) {
    const body = new URLSearchParams(fields);
    try {
      const response = await fetch(config.settingsUrl, {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
      });
      if (response.ok) preference = await response.json();
    } catch (error) {
      /* the prompt comes back next time */
    }
  }

  // Opens the browser's permission dialog (only a click may), then the prompt is answered for good.
  function allowButton(className) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = className;
    button.textContent = "Allow in this browser";
    button.addEventListener("click", async () => {
      document.getElementById("notify-prompt")?.remove();
      await Notification.requestPermission();
      await savePreference({ prompt: "dismissed" });
      describePermission();
    });
    return button;
  }

  // The one-time prompt: the browser's permission dialog may only open from a click, so the page asks first.
  function offerPermission() {
    if (document.getElementById("notify-prompt")) return;
    if (!("Notification" in window) || Notification.permission !== "default") return;
    if (!preference.browserNotifications || preference.promptDismissed) return;
    const bar = document.createElement("aside");
    bar.id = "notify-prompt";
    bar.className = "notify-prompt";
    bar.setAttribute("role", "dialog");
    bar.setAttribute("aria-label", "Browser notifications");
    const text = document.createElement("span");
    text.textContent =
      "Show a browser notification when processing of an email completes? Your browser will ask for permission.";
    const allow = allowButton("small");
    const later = document.createElement("button");
    later.type = "button";
    later.className = "secondary small";
    later.textContent = "Not now";
    later.addEventListener("click", () => {
      bar.remove();
      savePreference({ prompt: "dismissed" });
    });
    bar.append(text, allow, later);
    // In the page's flow at the top of the content, never floating over it (it covered buttons at the bottom).
    const main = document.querySelector("main");
    if (main) main.prepend(bar);
    else document.body.prepend(bar);
  }

  // Where the Results page shows the notification switch, say what the browser itself allows.
  function describePermission() {
    const slot = document.querySelector("[data-notification-permission]");
    if (!slot) return;
    // Runs after every htmx swap (the live tree refreshes): rewrite only when what it says changes, so its
    // button is not replaced under the user's pointer or focus.
    const state = !("Notification" in window)
      ? "unsupported"
      : `${Notification.permission}:${Boolean(preference.browserNotifications)}`;
    if (slot.dataset.state === state) return;
    slot.dataset.state = state;
    if (!("Notification" in window)) {
      slot.textContent = "This browser cannot show notifications.";
    } else if (Notification.permission === "denied") {
      slot.textContent = "The browser blocks them for this site: allow notifications in its site settings.";
    } else if (Notification.permission === "default" && preference.browserNotifications) {
      slot.textContent = "This browser has not been given permission to show them yet. ";
      slot.append(allowButton("secondary small"));
    } else {
      slot.textContent = "";
    }
  }

  document.addEventListener("htmx:afterSwap", describePermission);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") poll();
  });
  poll();
  connect();
  window.setInterval(poll, POLL_MS);
})();
