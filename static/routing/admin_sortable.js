// Drag-and-drop ordering for the filter inline under a director: rows are reordered in place and the
// "order" inputs renumbered, so saving the director saves the new routing order.
(function () {
  "use strict";
  function renumber(tbody) {
    var position = 0;
    tbody.querySelectorAll("tr.form-row:not(.empty-form)").forEach(function (row) {
      var input = row.querySelector('input[name$="-order"]');
      var regex = row.querySelector('input[name$="-regex"]');
      if (input && (regex && regex.value !== "")) { input.value = position++; }
    });
  }
  function setup(group) {
    var tbody = group.querySelector("tbody");
    if (!tbody || tbody.dataset.sortableReady) { return; }
    tbody.dataset.sortableReady = "1";
    var dragged = null;
    tbody.addEventListener("dragstart", function (event) {
      dragged = event.target.closest("tr.form-row");
      if (dragged) { dragged.classList.add("is-dragging"); event.dataTransfer.effectAllowed = "move"; }
    });
    tbody.addEventListener("dragend", function () {
      if (dragged) { dragged.classList.remove("is-dragging"); }
      dragged = null;
      renumber(tbody);
    });
    tbody.addEventListener("dragover", function (event) {
      var target = event.target.closest("tr.form-row");
      if (!dragged || !target || target === dragged || target.classList.contains("empty-form")) { return; }
      event.preventDefault();
      var box = target.getBoundingClientRect();
      var after = event.clientY > box.top + box.height / 2;
      tbody.insertBefore(dragged, after ? target.nextSibling : target);
    });
    function arm() {
      tbody.querySelectorAll("tr.form-row:not(.empty-form)").forEach(function (row) {
        row.setAttribute("draggable", "true");
        row.title = "Drag to change the routing order";
      });
    }
    arm();
    document.addEventListener("formset:added", arm);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".sortable-filters").forEach(setup);
  });
})();
