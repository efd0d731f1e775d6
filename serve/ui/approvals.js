// approvals.js: approval cards, question forms and MCP servers' forms.
//
// A card calls answer(reply) with one of
//   {behavior:"allow"} | {behavior:"allow", always:true} |
//   {behavior:"deny", message} | {answers:{question: label}} |
//   {behavior:"allow", content:{property: value}} (an elicitation)
// and shows the outcome when the server says the approval was resolved
// (here or in another tab), so an approval is never answered twice.

import { toolInput, toolSummary } from "./transcript.js";
import { render as markdown } from "./md.js";
import { el } from "./dom.js";

/** ruleText describes a permission suggestion as a person reads it. */
export function ruleText(s) {
  // The server applies a rule for a settings file to this session too
  // (the CLI ignores settings files in workspaces it does not trust).
  const where = !s.destination ? "" : s.destination === "session" ? " (this session)" : " (this session; saved to " + destName(s.destination) + ")";
  switch (s.type) {
    case "addRules":
    case "replaceRules":
      return (s.behavior || "allow") + " " + (s.rules || []).map((r) => r.toolName + (r.ruleContent ? "(" + r.ruleContent + ")" : "")).join(", ") + where;
    case "removeRules":
      return "remove " + (s.rules || []).map((r) => r.toolName + (r.ruleContent ? "(" + r.ruleContent + ")" : "")).join(", ") + where;
    case "addDirectories":
      return "allow access to " + (s.directories || []).join(", ") + where;
    case "removeDirectories":
      return "remove access to " + (s.directories || []).join(", ") + where;
    case "setMode":
      return "switch to " + s.mode + " mode" + where;
  }
  return JSON.stringify(s);
}

function destName(d) {
  return (
    {
      session: "this session",
      localSettings: "this project's local settings",
      projectSettings: "this project's settings",
      userSettings: "your settings, all projects",
      cliArg: "command line",
    }[d] || d
  );
}

/**
 * card builds the card for an approval (ApprovalInfo).
 * @param {any} a
 * @param {(reply:any)=>Promise<void>} answer
 */
export function card(a, answer, toolInput_) {
  const input = parse(a.input);
  if (a.kind === "question") return questionCard(a, input, answer);
  if (a.kind === "elicitation") return elicitationCard(a, answer);
  const plan = a.tool_name === "ExitPlanMode";
  const c = el("section", "approval" + (plan ? " plan-approval" : ""));
  c.dataset.id = a.id;
  c.tabIndex = -1;
  c.setAttribute("role", "alertdialog");
  const name = a.display_name || a.tool_name;
  c.appendChild(el("h3", null, plan ? "Claude has a plan. Start working on it?" : a.title || "Allow " + name + "?"));
  c.setAttribute("aria-label", plan ? "Plan approval" : "Allow " + name);
  const why = [a.description, a.decision_reason, a.blocked_path ? "path: " + a.blocked_path : ""].filter(Boolean).join(" · ");
  if (why && !plan) c.appendChild(el("p", "why", why));
  const body = el("div", "input");
  if (plan) {
    // Newer CLIs ask without the plan in the request; the model's call
    // (in the transcript) has it.
    const text = input?.plan ?? (toolInput_ && toolInput_(a.tool_use_id))?.plan;
    if (text) {
      const p = el("div", "plan md");
      p.appendChild(markdown(String(text), 4)); // under the card's h3
      body.appendChild(p);
    } else {
      body.appendChild(el("p", "why", "The plan is in the conversation above."));
    }
  } else {
    body.appendChild(toolInput(a.tool_name, input, typeof a.input === "string" ? a.input : "", true));
  }
  c.appendChild(body);
  const sugg = a.suggestions || [];
  if (sugg.length && !plan) {
    const r = el("div", "rule");
    r.appendChild(document.createTextNode("Allow always: "));
    sugg.forEach((s, i) => {
      if (i) r.appendChild(document.createTextNode("; "));
      r.appendChild(el("code", null, ruleText(s)));
    });
    c.appendChild(r);
  }
  const acts = el("div", "acts");
  const allow = el("button", "primary allow", plan ? "Approve plan" : "Allow");
  allow.type = "button";
  allow.title = "Enter";
  acts.appendChild(allow);
  let always = null;
  if (sugg.length && !plan) {
    always = el("button", "always", "Allow always");
    always.type = "button";
    always.title = "a";
    acts.appendChild(always);
  }
  const reason = el("input", "reason");
  reason.placeholder = plan ? "What to change (optional)" : "Reason to deny (optional)";
  reason.setAttribute("aria-label", "Reason");
  acts.appendChild(reason);
  const deny = el("button", "danger deny", plan ? "Keep planning" : "Deny");
  deny.type = "button";
  deny.title = "Esc";
  acts.appendChild(deny);
  c.appendChild(acts);
  const err = el("p", "err");
  c.appendChild(err);

  const go = sender(c, [allow, always, deny].filter(Boolean), err, answer);
  const denyReply = () => ({ behavior: "deny", message: reason.value.trim() || (plan ? "Keep planning: the user did not approve the plan yet." : "") });
  allow.onclick = () => go({ behavior: "allow" });
  if (always) always.onclick = () => go({ behavior: "allow", always: true });
  deny.onclick = () => go(denyReply());
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      go(denyReply());
    }
  });
  // Keys for the card as a whole (the app routes them to the first card).
  c.keys = (e) => {
    if (e.key === "Enter") {
      go({ behavior: "allow" });
      return true;
    }
    if (e.key === "Escape") {
      go(denyReply());
      return true;
    }
    if (e.key === "a" && always) {
      go({ behavior: "allow", always: true });
      return true;
    }
    return false;
  };
  return c;
}

function questionCard(a, input, answer) {
  const c = el("section", "approval question");
  c.dataset.id = a.id;
  c.tabIndex = -1;
  c.setAttribute("role", "alertdialog");
  c.setAttribute("aria-label", "Question");
  c.appendChild(el("h3", null, "Claude asks"));
  const form = el("form");
  const qs = a.questions && a.questions.length ? a.questions : input?.questions || [];
  const fields = [];
  qs.forEach((q, qi) => {
    const fs = el("fieldset", "q");
    const lg = el("legend");
    if (q.header) lg.appendChild(el("div", "hdr", q.header));
    lg.appendChild(document.createTextNode(q.question));
    fs.appendChild(lg);
    const name = "q" + qi;
    const multi = !!(q.multiSelect ?? q.multi_select);
    (q.options || []).forEach((o, oi) => {
      const lab = el("label");
      const inp = el("input");
      inp.type = multi ? "checkbox" : "radio";
      inp.name = name;
      inp.value = o.label;
      if (!multi && oi === 0) inp.required = false;
      lab.appendChild(inp);
      const t = el("span");
      t.appendChild(el("span", "olabel", o.label));
      if (o.description) {
        t.appendChild(document.createTextNode(" "));
        t.appendChild(el("span", "desc", o.description));
      }
      lab.appendChild(t);
      fs.appendChild(lab);
    });
    const other = el("input");
    other.type = "text";
    other.name = name + "-other";
    other.placeholder = "Or answer in your own words";
    other.setAttribute("aria-label", "Your own answer");
    fs.appendChild(other);
    form.appendChild(fs);
    fields.push({ q, name, multi, other, fs });
  });
  const { decline: skip, err, go } = formEnd(c, form, "Answer", answer);
  const collect = () => {
    const answers = {};
    for (const f of fields) {
      const own = f.other.value.trim();
      const picked = [...form.querySelectorAll(`input[name="${f.name}"]:checked`)].map((i) => i.value);
      if (own) picked.push(own);
      if (!picked.length) {
        err.textContent = "Answer every question (or decline).";
        return null;
      }
      answers[f.q.question] = picked.join(", ");
    }
    return answers;
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const answers = collect();
    if (answers) go({ answers });
  });
  skip.onclick = () => go({ behavior: "deny", message: "The user declined to answer." });
  c.keys = (e) => {
    if (e.key === "Escape") {
      go({ behavior: "deny", message: "The user declined to answer." });
      return true;
    }
    if (e.key === "Enter") {
      form.requestSubmit();
      return true;
    }
    if (/^[1-9]$/.test(e.key) && fields.length) {
      // Digits pick options of the question in focus, else of the first
      // unanswered one.
      const f = fields.find((f) => f.fs.contains(document.activeElement)) || fields.find((f) => !form.querySelector(`input[name="${f.name}"]:checked`)) || fields[0];
      const inp = form.querySelectorAll(`input[name="${f.name}"]`)[Number(e.key) - 1];
      if (inp) {
        inp.checked = f.multi ? !inp.checked : true;
        return true;
      }
    }
    return false;
  };
  return c;
}

/**
 * elicitationCard is an MCP server asking for input: a form built from
 * its requested schema (flat properties: text, numbers, yes/no, a choice
 * of values), or a page to visit (mode "url"). Submit accepts with the
 * values, Decline declines.
 */
function elicitationCard(a, answer) {
  const c = el("section", "approval elicitation");
  c.dataset.id = a.id;
  c.tabIndex = -1;
  c.setAttribute("role", "alertdialog");
  const who = a.display_name || a.server || "An MCP server";
  c.setAttribute("aria-label", who + " asks for input");
  c.appendChild(el("h3", null, a.title || who + " asks for input"));
  if (a.message) c.appendChild(el("p", "message", a.message));
  const form = el("form");
  const fields = [];
  const byURL = a.mode === "url";
  if (byURL) {
    const p = el("p", "visit");
    if (/^https?:\/\//i.test(a.url || "")) {
      const link = el("a", null, a.url);
      link.href = a.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      p.appendChild(document.createTextNode("Open "));
      p.appendChild(link);
      p.appendChild(document.createTextNode(", then press Done."));
    } else {
      p.textContent = "The server asks you to visit a page it did not give as a web address: " + (a.url || "none") + ".";
    }
    form.appendChild(p);
  } else {
    // The server's schema, read once by the host (ApprovalInfo.form).
    for (const f of a.form || []) {
      const field = formField(f);
      form.appendChild(field.row);
      fields.push(field);
    }
  }
  const { decline, go } = formEnd(c, form, byURL ? "Done" : "Submit", answer);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (byURL) return go({ behavior: "allow" });
    const content = {};
    for (const f of fields) {
      const v = f.value();
      if (v !== undefined) content[f.name] = v;
    }
    go({ behavior: "allow", content });
  });
  decline.onclick = () => go({ behavior: "deny" });
  c.keys = (e) => {
    if (e.key === "Escape") {
      go({ behavior: "deny" });
      return true;
    }
    if (e.key === "Enter") {
      form.requestSubmit();
      return true;
    }
    return false;
  };
  return c;
}

/**
 * formField is one field of an elicitation's form, as the host lists it
 * (host.FormField: name, title, type, format, required, choices, default,
 * bounds): its row (label, control, description) and value(), the
 * field's JSON value, or undefined when left empty.
 */
function formField(f) {
  const { name, required } = f;
  const row = el("label", "field");
  row.appendChild(el("span", "fname", (f.title || name) + (required ? " *" : "")));
  const choices = f.choices && f.choices.length ? f.choices : null;
  let value;
  if (choices) {
    const sel = el("select");
    sel.name = name;
    sel.required = !!required;
    sel.appendChild(el("option", null, required ? "Choose…" : "—")).value = "";
    choices.forEach((ch, i) => {
      const o = el("option", null, ch.label);
      o.value = String(i);
      if (f.default !== undefined && ch.value === f.default) o.selected = true;
      sel.appendChild(o);
    });
    row.appendChild(sel);
    value = () => (sel.value === "" ? undefined : choices[Number(sel.value)].value);
  } else if (f.type === "boolean") {
    const box = el("input");
    box.type = "checkbox";
    box.name = name;
    box.checked = f.default === true;
    row.classList.add("check");
    row.appendChild(box);
    value = () => box.checked;
  } else {
    const inp = el("input");
    inp.name = name;
    inp.required = !!required;
    if (f.type === "number" || f.type === "integer") {
      inp.type = "number";
      inp.step = f.type === "integer" ? "1" : "any";
      if (typeof f.minimum === "number") inp.min = String(f.minimum);
      if (typeof f.maximum === "number") inp.max = String(f.maximum);
    } else {
      inp.type = { email: "email", uri: "url", date: "date" }[f.format] || "text";
      // No input of the browser's gives RFC 3339 with its offset: show the shape.
      if (f.format === "date-time") inp.placeholder = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      if (typeof f.min_length === "number") inp.minLength = f.min_length;
      if (typeof f.max_length === "number") inp.maxLength = f.max_length;
    }
    if (f.default !== undefined && f.default !== null) inp.value = String(f.default);
    row.appendChild(inp);
    value = () => {
      const v = inp.value.trim();
      if (v === "") return undefined;
      return inp.type === "number" ? Number(v) : v;
    };
  }
  if (f.description) row.appendChild(el("span", "desc", f.description));
  return { name, row, value };
}

/**
 * resolved marks a card answered with its outcome. mine says this tab
 * answered it (its answer was sent, whether or not the reply has come
 * yet: the resolved event and the reply race); otherwise the card says
 * it was answered elsewhere.
 */
export function resolved(c, r, mine) {
  c.classList.add("answered");
  c.querySelectorAll("button, input, select").forEach((b) => (b.disabled = true));
  let text = outcomeText(r, c.classList.contains("elicitation"));
  if (r.outcome === "denied" && r.message) text += ": " + r.message;
  const here = mine || c.answeredHere;
  // On a team server the event names who answered; that says more than
  // "elsewhere".
  if (r.answered_by && r.outcome !== "withdrawn") text += " — answered by " + r.answered_by;
  else if (r.outcome !== "withdrawn" && !here) text += " (answered elsewhere)";
  const o = el("p", "outcome", text);
  if (r.answered_by) c.dataset.answeredBy = r.answered_by;
  c.dataset.answered = r.outcome === "withdrawn" ? "withdrawn" : here ? "here" : "elsewhere";
  c.appendChild(o);
}

/**
 * outcomeText is the word for how an approval ended, r being the
 * approval_resolved payload or a snapshot's resolved entry. A form (an
 * MCP server's elicitation) not answered was "Declined", not "Denied":
 * the server's tool was not refused, it goes on without the values.
 */
export function outcomeText(r, form) {
  if (r.outcome === "denied" || r.outcome === "declined") return form || r.outcome === "declined" ? "Declined" : "Denied";
  return { allowed: r.always ? "Allowed always" : "Allowed", answered: "Answered", withdrawn: "Withdrawn by Claude" }[r.outcome] || r.outcome || "";
}

/**
 * recordText is the one line an answered approval leaves in the
 * transcript: "Allowed by Alice · Bash ls", "Denied: not today · Bash
 * rm -rf build". r is the approval_resolved payload (or a snapshot's
 * resolved entry), tool the tool's name, input its input when known.
 */
export function recordText(r, tool, input) {
  let what = outcomeText(r);
  if (r.answered_by && r.outcome !== "withdrawn") what += " by " + r.answered_by;
  if ((r.outcome === "denied" || r.outcome === "declined") && r.message) what += ": " + r.message;
  let gist = "";
  if (input && typeof input === "object") gist = tool === "Bash" ? input.command || "" : toolSummary(tool, input);
  gist = String(gist).replace(/\s+/g, " ").trim();
  if (gist.length > 120) gist = gist.slice(0, 119) + "…";
  return what + (tool ? " · " + tool + (gist ? " " + gist : "") : "");
}

/** record is the element of recordText, for the transcript. */
export function record(r, tool, input) {
  const e = el("div", "approval-record");
  e.dataset.id = r.id || "";
  e.dataset.outcome = r.outcome || "";
  if (r.answered_by) e.dataset.answeredBy = r.answered_by;
  e.textContent = recordText(r, tool, input);
  return e;
}

// formEnd ends a card's form with its buttons (submit, with Enter;
// Decline, with Esc) and the line for errors, puts the form in the card,
// and returns the Decline button, the error line and the card's sender.
function formEnd(c, form, label, answer) {
  const acts = el("div", "acts");
  const submit = el("button", "primary", label);
  submit.type = "submit";
  submit.title = "Enter";
  acts.appendChild(submit);
  const decline = el("button", "danger deny", "Decline");
  decline.type = "button";
  decline.title = "Esc";
  acts.appendChild(decline);
  form.appendChild(acts);
  const err = el("p", "err");
  form.appendChild(err);
  c.appendChild(form);
  return { decline, err, go: sender(c, [submit, decline], err, answer) };
}

// sender is how a card answers: its buttons are off while the answer is
// on its way, and back on with the reason when it fails (unless another
// tab answered first: refused).
function sender(c, buttons, err, answer) {
  return async (reply) => {
    if (c.classList.contains("answered")) return;
    buttons.forEach((b) => (b.disabled = true));
    err.textContent = "";
    try {
      await answer(reply);
      c.answeredHere = true;
    } catch (e) {
      if (refused(c)) return;
      err.textContent = e.message;
      buttons.forEach((b) => (b.disabled = false));
    }
  };
}

// refused handles our answer failing after the card was resolved as
// ours: another tab's answer won the race, so say so. It reports whether
// the card was resolved already.
function refused(c) {
  if (!c.classList.contains("answered")) return false;
  const o = c.querySelector(".outcome");
  if (c.dataset.answered === "here" && o) {
    o.textContent += " (answered elsewhere)";
    c.dataset.answered = "elsewhere";
  }
  return true;
}

function parse(v) {
  if (v == null) return undefined;
  if (typeof v === "string") {
    try {
      return JSON.parse(v);
    } catch {
      return undefined;
    }
  }
  return v;
}
