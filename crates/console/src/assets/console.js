// Sundial console: progressive enhancement only; every page reads and works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Times carry the viewer's own zone as a tooltip.
  for (const t of document.querySelectorAll("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) t.title = "Your time: " + d.toLocaleString();
  }
  // Destructive forms ask first.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // The trigger form checks its JSON before sending it.
  const args = document.getElementById("trigger-args");
  if (args) {
    args.form.addEventListener("submit", (event) => {
      try {
        const value = JSON.parse(args.value || "{}");
        if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("expected a JSON object");
        args.setCustomValidity("");
      } catch (e) {
        args.setCustomValidity("Arguments: " + e.message);
        args.reportValidity();
        event.preventDefault();
      }
    });
    args.addEventListener("input", () => args.setCustomValidity(""));
  }
});
