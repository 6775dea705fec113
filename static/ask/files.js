// Folder suggestion cards in Ask (templates/ask/partials/suggestion_cards.html): "Move to …" and "Keep in
// inbox" call the organization API (POST /api/inbox/suggestions/<id>/respond) and show what happened in the
// card. Delegated from the document, so cards swapped in later (a new answer, a live update) work too.
(function () {
  "use strict";

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function setBusy(card, busy) {
    card.querySelectorAll("button[data-suggestion-action]").forEach(function (button) {
      button.disabled = busy;
    });
  }

  async function respond(card, action) {
    const status = card.querySelector("[data-testid=ask-suggestion-status]");
    setBusy(card, true);
    status.textContent = action === "accept" ? "Moving…" : "Saving…";
    let body = {};
    let ok = false;
    try {
      const response = await fetch(card.dataset.respondUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ action: action }),
      });
      ok = response.ok;
      body = await response.json().catch(function () { return {}; });
      if (!ok && !body.error && !body.detail) body.error = "the server answered " + response.status;
    } catch (error) {
      body = { error: "the server could not be reached (" + error.message + ")" };
    }
    if (!ok) {
      const why = body.error || (Array.isArray(body.detail) ? "the request was refused" : body.detail);
      status.textContent = "Nothing changed: " + why + ".";
      status.classList.add("error-text");
      setBusy(card, false);
      return;
    }
    status.classList.remove("error-text");
    card.dataset.status = body.status || "";
    if (body.status === "accepted" && body.move) {
      status.textContent = "Moved to " + (body.finalFolder || "") + " (now " + body.move.to + "). Undo on the Organization page.";
    } else if (body.status === "rejected") {
      status.textContent = "Kept in the inbox.";
    } else {
      status.textContent = "Now " + (body.status || "decided") + ".";
    }
    const actions = card.querySelector(".ask-suggestion-actions");
    if (actions) actions.remove();
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest ? event.target.closest("button[data-suggestion-action]") : null;
    if (!button) return;
    const card = button.closest(".ask-suggestion");
    if (!card || !card.dataset.respondUrl) return;
    event.preventDefault();
    respond(card, button.dataset.suggestionAction);
  });
})();
