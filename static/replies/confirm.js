// The confirmation form sends once: the button is disabled after the first submit, so a double click
// cannot post twice (the server refuses a second send anyway, but the user should not see that error).
(function () {
  "use strict";
  const form = document.getElementById("confirm-send-form");
  if (!form) return;
  form.addEventListener("submit", function () {
    const button = form.querySelector("button[type=submit]");
    if (!button) return;
    // Disable after the submit has been dispatched: a disabled button's form would not send its value.
    window.setTimeout(function () {
      button.disabled = true;
      button.textContent = "Sending…";
    }, 0);
  });
})();
