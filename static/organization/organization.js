// Organization page: drag and drop onto the upload zone, alternative chips fill the folder picker, and
// keyboard shortcuts on a focused card (a accept, r reject, c choose folder, j/k next/previous).
(function () {
  function bind() {
    const drop = document.querySelector(".org-drop");
    const input = document.getElementById("org-files");
    if (drop && input && !drop.dataset.bound) {
      drop.dataset.bound = "1";
      ["dragenter", "dragover"].forEach((n) => drop.addEventListener(n, (e) => { e.preventDefault(); drop.classList.add("over"); }));
      ["dragleave", "drop"].forEach((n) => drop.addEventListener(n, (e) => { e.preventDefault(); drop.classList.remove("over"); }));
      drop.addEventListener("drop", (e) => {
        if (!e.dataTransfer || !e.dataTransfer.files.length) return;
        input.files = e.dataTransfer.files;
        input.form.requestSubmit();
      });
    }
  }
  document.addEventListener("click", (e) => {
    const chip = e.target.closest(".org-alt");
    if (!chip) return;
    const field = chip.closest(".org-card").querySelector("input[name=folder]");
    field.value = chip.dataset.folder;
    field.focus();
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey) return;
    const cards = Array.from(document.querySelectorAll(".org-card"));
    const card = e.target.closest && e.target.closest(".org-card");
    if (e.key === "j" || e.key === "k") {
      const i = card ? cards.indexOf(card) : -1;
      const next = cards[e.key === "j" ? Math.min(cards.length - 1, i + 1) : Math.max(0, i - 1)];
      if (next) { next.focus(); e.preventDefault(); }
      return;
    }
    if (!card) return;
    const target = card.querySelector(`[data-key="${e.key}"]`);
    if (!target) return;
    e.preventDefault();
    if (target.tagName === "INPUT") target.focus(); else target.click();
  });
  document.addEventListener("DOMContentLoaded", bind);
  document.addEventListener("htmx:afterSwap", bind);
})();
