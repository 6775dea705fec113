// The reply editor's file picker: files over the reply's size limit are refused in the browser, before the
// form is sent (a request over the server's limit would be answered 413 and the typed text not saved).
(function () {
  "use strict";
  const input = document.getElementById("reply-attachment-file");
  if (!input) return;
  const alert = input.parentElement.querySelector("[data-testid=attachment-too-large]");
  const limit = Number(input.dataset.maxBytes || 0);
  const attached = (input.dataset.attachedBytes || "").split(",").filter(Boolean).map(Number);

  function size(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
    if (bytes >= 1024) return Math.round(bytes / 1024) + " KB";
    return bytes + " bytes";
  }

  input.addEventListener("change", function () {
    const total = attached.reduce((a, b) => a + b, 0) + Array.from(input.files).reduce((a, f) => a + f.size, 0);
    if (limit && total > limit) {
      const names = Array.from(input.files, (f) => f.name).join(", ");
      alert.textContent =
        "Not attached: " + names + ". The reply's files would total " + size(total) + "; at most " + size(limit) +
        " can go with this reply. Pick fewer or smaller files.";
      alert.hidden = false;
      input.value = "";
    } else {
      alert.hidden = true;
      alert.textContent = "";
    }
  });
})();
