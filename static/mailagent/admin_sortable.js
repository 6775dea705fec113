// Drag-and-drop ordering for admin inlines with an "order" field (filters, agents, prompt messages):
// rows are reordered in place and the "order" inputs renumbered; saving the parent saves the order.
(function () {
  "use strict";
  // Blank extra rows keep their order untouched, or Django would validate them as new objects.
  function used(row) {
    var id = row.querySelector('input[type="hidden"][name$="-id"]');
    if (id && id.value) { return true; }
    return Array.prototype.some.call(row.querySelectorAll('input[type="text"], textarea'), function (field) {
      return !/-order$/.test(field.name) && field.value.trim() !== "";
    });
  }
  function renumber(tbody) {
    var position = 0;
    tbody.querySelectorAll("tr.form-row:not(.empty-form)").forEach(function (row) {
      var input = row.querySelector('input[name$="-order"]');
      if (input && used(row)) { input.value = position++; }
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
        row.title = "Drag to change the order";
      });
    }
    arm();
    document.addEventListener("formset:added", arm);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".sortable-inline").forEach(setup);
  });
})();
