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
  // The jobs list: the box that selects every row of the page (hidden without the script), and
  // ticking a row picks "the jobs selected" in the bulk form.
  const all = document.getElementById("select-all");
  if (all) {
    const rows = [...document.querySelectorAll("input[name=jobIds][form=bulk]")];
    const selected = document.querySelector("#bulk input[name=scope][value=selected]");
    all.hidden = false;
    all.addEventListener("change", () => {
      for (const row of rows) row.checked = all.checked;
      if (selected) selected.checked = true;
    });
    for (const row of rows) {
      row.addEventListener("change", () => {
        all.checked = rows.every((r) => r.checked);
        if (selected && row.checked) selected.checked = true;
      });
    }
  }
  // A form that came back with problems: their summary first.
  const problems = document.getElementById("problems");
  if (problems) problems.focus();
  const create = document.querySelector("form.create");
  if (create) createForm(create);
});

// The create page: only the chosen schedule kind's fields are shown, and the next fire times
// follow the schedule as it is typed. The preview posts to /ui/specs/preview, the API's own
// POST /specs/preview handler behind the console's session; the server turns the form into a
// definition the same way when it is sent (crates/console/src/create.rs).
function createForm(form) {
  const kinds = form.querySelectorAll("input[name=when]");
  const kind = () => (form.querySelector("input[name=when]:checked") || {}).value;
  const showKind = () => {
    for (const group of form.querySelectorAll(".when")) {
      group.hidden = !group.dataset.when.split(" ").includes(kind());
    }
  };
  for (const radio of kinds) radio.addEventListener("change", showKind);
  showKind();

  const out = document.getElementById("preview");
  const button = form.querySelector("button[value=preview]");
  if (!out || !window.fetch) return;
  if (button) button.hidden = true;
  const say = (text, cls) => {
    const p = document.createElement("p");
    p.className = cls || "muted";
    p.textContent = text;
    out.replaceChildren(p);
  };
  const field = (name) => (form.elements[name] ? form.elements[name].value.trim() : "");
  const request = () => {
    let extra = {};
    try {
      const value = JSON.parse(field("extra") || "{}");
      if (value && typeof value === "object" && !Array.isArray(value)) extra = value;
    } catch (e) { /* the server names the JSON's problem when the form is sent */ }
    const zoned = (spec) => (field("timeZone") ? Object.assign(spec, { timeZone: field("timeZone") }) : spec);
    let key = "schedule";
    let spec;
    switch (kind()) {
      case "cron": {
        const lines = field("cron").split("\n").map((l) => l.trim()).filter(Boolean);
        if (!lines.length) return { note: "Enter a cron expression to see when it fires." };
        spec = zoned({ cron: lines });
        break;
      }
      case "interval":
        if (!field("interval")) return { note: "Enter an interval to see when it fires." };
        spec = zoned({ intervals: [field("interval")] });
        break;
      case "calendars": {
        if (!field("calendars")) return { note: "Enter a calendar to see when it fires." };
        let calendars;
        try { calendars = JSON.parse(field("calendars")); } catch (e) { return { problem: "Calendars: invalid JSON: " + e.message }; }
        spec = zoned({ calendars: Array.isArray(calendars) ? calendars : [calendars] });
        break;
      }
      case "timer":
        key = "timer";
        spec = {};
        for (const name of ["dueTime", "period", "ttl"]) if (field(name)) spec[name] = field(name);
        break;
      case "triggered":
        return { note: "Only when triggered: no fire times." };
      default:
        if (extra.schedule) spec = extra.schedule;
        else if (extra.timer) { key = "timer"; spec = extra.timer; }
        else return { note: "No schedule and no timer: the job runs once, now." };
    }
    // The rest of the schedule (jitter, exclusions, DST) may come from the JSON editor.
    if (kind() !== "json" && extra[key] && typeof extra[key] === "object") spec = Object.assign({}, extra[key], spec);
    const body = { [key]: spec, count: 5 };
    if (/^[A-Za-z0-9_.-]{1,128}$/.test(field("jobId"))) body.jobId = field("jobId");
    return { body };
  };
  let timer = null;
  let controller = null;
  const update = async () => {
    const wanted = request();
    if (controller) controller.abort();
    if (!wanted.body) return say(wanted.note || wanted.problem, wanted.problem ? "error" : "muted");
    controller = new AbortController();
    try {
      const response = await fetch("/ui/specs/preview", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(wanted.body),
        credentials: "same-origin",
        signal: controller.signal,
      });
      const answer = await response.json();
      if (!response.ok) return say(answer.resp_msg || "The preview failed (" + response.status + ").", "error");
      if (!answer.times.length) return say((answer.warnings || [])[0] || "No fire times ahead.");
      const list = document.createElement("ol");
      list.className = "fires";
      for (const time of answer.times) {
        const item = document.createElement("li");
        const t = document.createElement("time");
        t.setAttribute("datetime", time);
        t.textContent = time.replace("T", " ");
        item.append(t);
        list.append(item);
      }
      out.replaceChildren(list);
    } catch (e) {
      if (e.name !== "AbortError") say("The preview failed: " + e.message, "error");
    }
  };
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(update, 300);
  };
  for (const name of ["cron", "interval", "calendars", "timeZone", "dueTime", "period", "ttl", "jobId", "extra"]) {
    if (form.elements[name]) form.elements[name].addEventListener("input", soon);
  }
  for (const radio of kinds) radio.addEventListener("change", soon);
  update();
}
