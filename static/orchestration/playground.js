// Prompt playground: message blocks (add, delete, reorder by drag or Alt+Up/Down on the handle),
// {{variable}} insertion from the menu, and unknown-variable flags before saving. The preview and
// "Try it" are htmx requests declared in the template; "blocks-changed" tells the preview to refresh.
(function () {
  "use strict";
  const VARIABLE = /\{\{\s*([a-zA-Z_][a-zA-Z0-9_.]*)\s*\}\}/g;

  function init() {
    const form = document.getElementById("prompt-form");
    if (!form || form.dataset.ready) return;
    form.dataset.ready = "1";
    const list = document.getElementById("prompt-blocks");
    const template = document.getElementById("prompt-block-template");
    const menu = document.getElementById("variable-menu");
    const known = new Set((form.dataset.variables || "").split(/\s+/).filter(Boolean));
    let lastTextarea = null;
    let dragged = null;

    const changed = () => document.body.dispatchEvent(new Event("blocks-changed"));

    function unknownIn(text) {
      const names = [];
      for (const match of text.matchAll(VARIABLE)) {
        if (!known.has(match[1]) && !names.includes(match[1])) names.push(match[1]);
      }
      return names;
    }

    function flag(block) {
      const area = block.querySelector("textarea");
      const note = block.querySelector(".unknown-variables");
      const names = unknownIn(area.value);
      note.hidden = names.length === 0;
      note.textContent = names.length
        ? "Unknown variable" + (names.length > 1 ? "s" : "") + ": " + names.map((n) => "{{" + n + "}}").join(", ")
        : "";
      area.setAttribute("aria-invalid", names.length ? "true" : "false");
      return names.length;
    }

    function move(block, direction) {
      if (direction < 0 && block.previousElementSibling) list.insertBefore(block, block.previousElementSibling);
      else if (direction > 0 && block.nextElementSibling) list.insertBefore(block.nextElementSibling, block);
      else return;
      changed();
    }

    form.addEventListener("click", (event) => {
      const button = event.target.closest("[data-action]");
      if (!button) return;
      const block = button.closest(".prompt-block");
      const action = button.dataset.action;
      if (action === "add-block") {
        const fresh = template.content.firstElementChild.cloneNode(true);
        const previous = list.lastElementChild;
        if (previous) {
          // A new block follows the conversation: after a user message comes the assistant, and back.
          const role = previous.querySelector("select").value;
          fresh.querySelector("select").value = role === "user" ? "assistant" : "user";
        }
        list.appendChild(fresh);
        fresh.querySelector("textarea").focus();
        changed();
      } else if (action === "delete-block" && block) {
        const next = block.nextElementSibling || block.previousElementSibling;
        block.remove();
        if (next) next.querySelector(".drag-handle").focus();
        else form.querySelector("[data-action=add-block]").focus();
        changed();
      } else if (action === "move-up" && block) {
        move(block, -1);
        button.focus();
      } else if (action === "move-down" && block) {
        move(block, 1);
        button.focus();
      }
    });

    form.addEventListener("keydown", (event) => {
      const handle = event.target.closest(".drag-handle");
      if (!handle || !event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      event.preventDefault();
      move(handle.closest(".prompt-block"), event.key === "ArrowUp" ? -1 : 1);
      handle.focus();
    });

    form.addEventListener("dragstart", (event) => {
      const handle = event.target.closest(".drag-handle");
      if (!handle) return;
      dragged = handle.closest(".prompt-block");
      dragged.classList.add("dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", "");
    });
    list.addEventListener("dragover", (event) => {
      if (!dragged) return;
      event.preventDefault();
      const over = event.target.closest(".prompt-block");
      if (!over || over === dragged) return;
      const box = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY < box.top + box.height / 2 ? over : over.nextElementSibling);
    });
    list.addEventListener("drop", (event) => event.preventDefault());
    form.addEventListener("dragend", () => {
      if (!dragged) return;
      dragged.classList.remove("dragging");
      dragged = null;
      changed();
    });

    form.addEventListener("focusin", (event) => {
      if (event.target.matches("textarea[name=content]")) lastTextarea = event.target;
    });
    form.addEventListener("input", (event) => {
      if (event.target.matches("textarea[name=content]")) flag(event.target.closest(".prompt-block"));
    });

    menu.addEventListener("change", () => {
      const name = menu.value;
      menu.value = "";
      if (!name) return;
      const area = lastTextarea && lastTextarea.isConnected ? lastTextarea : list.querySelector("textarea:last-of-type");
      if (!area) return;
      const text = "{{" + name + "}}";
      const start = area.selectionStart ?? area.value.length;
      const end = area.selectionEnd ?? start;
      area.setRangeText(text, start, end, "end");
      area.focus();
      area.dispatchEvent(new Event("input", { bubbles: true }));
    });

    form.addEventListener("submit", (event) => {
      let first = null;
      list.querySelectorAll(".prompt-block").forEach((block) => {
        if (flag(block) && !first) first = block;
      });
      if (first) {
        event.preventDefault();
        first.querySelector("textarea").focus();
        first.querySelector(".unknown-variables").scrollIntoView({ block: "center" });
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
