// fakemx page: reads /api/v1, refreshes on server-sent "change" events.
"use strict";

const $ = (sel) => document.querySelector(sel);
let selected = null;     // ID of the open message
let scriptDirty = false; // the editor holds unsaved edits
let refreshPending = false;

// el builds an element; children are nodes or strings (always text, never HTML).
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) e.append(c);
  return e;
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
}

function clock(t) {
  return new Date(t).toLocaleTimeString([], { hour12: false }) + "." + String(new Date(t).getMilliseconds()).padStart(3, "0");
}

// The search box filters the list by text (the decoded text and HTML
// parts, the API's text= filter); empty shows everything.
function listURL() {
  const q = $("#search").value.trim();
  return "/api/v1/messages?limit=500" + (q ? "&text=" + encodeURIComponent(q) : "");
}

// Each message has its own URL, #/message/ID, so a link opens it.
function hashID() {
  const m = /^#\/message\/(\d+)$/.exec(location.hash);
  return m ? m[1] : null;
}

async function loadList() {
  const { messages } = await getJSON(listURL());
  const ul = $("#messages");
  ul.replaceChildren(...messages.map((m) => {
    const li = el("li", { className: "msg" + (m.id === selected ? " selected" : "") },
      el("a", { href: "#/message/" + m.id },
        el("span", { className: "subj" }, m.subject || "(no subject)"),
        el("span", { className: "meta" }, clock(m.time) + " · " + m.from + " → " + m.to.join(", "))));
    li.dataset.id = m.id;
    return li;
  }));
  $("#empty").hidden = messages.length > 0;
  $("#empty").textContent = $("#search").value.trim() ? "No message contains this text." : "Waiting for mail. Messages appear here as they arrive.";
  $("#count").textContent = messages.length === 1 ? "1 message" : messages.length + " messages";
}

function row(name, value) {
  return el("tr", {}, el("td", {}, name), el("td", {}, value));
}

async function openMessage(id) {
  selected = id;
  for (const li of document.querySelectorAll("#messages li")) li.classList.toggle("selected", li.dataset.id === id);
  const r = await fetch("/api/v1/messages/" + encodeURIComponent(id), { cache: "no-store" });
  if (!r.ok) {
    closeMessage((await r.json().catch(() => ({}))).error || "no such message");
    return;
  }
  const m = await r.json();
  const base = "/api/v1/messages/" + encodeURIComponent(id);
  $("#view").hidden = false;
  $("#subject").textContent = m.subject || "(no subject)";
  $("#envelope").replaceChildren(
    row("ID", m.id), row("Received", new Date(m.time).toISOString()),
    row("From", m.from), row("To", m.to.join(", ")),
    row("Client", m.client + " (HELO " + m.helo + ")" + (m.tls ? ", TLS" : "")), row("Size", m.size + " bytes"));
  $("#text").textContent = m.text || "(no text part)";
  $("#html-part").hidden = !m.html;
  $("#html").src = m.html ? base + "/html" : "about:blank";
  $("#attachments-part").hidden = m.attachments.length === 0;
  $("#attachments").replaceChildren(...m.attachments.map((a) => el("li", {},
    el("a", { href: base + "/attachments/" + a.index, download: a.filename || "" }, a.filename || "attachment " + a.index),
    " " + a.content_type + ", " + a.size + " bytes",
    // Raster images are shown; the server serves them sandboxed (…/inline).
    inlineTypes.includes(a.content_type) ? el("img", { className: "inline", src: base + "/attachments/" + a.index + "/inline", alt: a.filename || "" }) : "")));
  $("#headers").replaceChildren(...m.headers.map((h) => row(h.name, h.value)));
  $("#raw-link").href = base + "/raw";
  $("#raw").textContent = await (await fetch(base + "/raw")).text();
  await loadTimeline(m);
}

const inlineTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"];

// closeMessage hides the view, saying why when there is a reason.
function closeMessage(why) {
  selected = null;
  $("#view").hidden = true;
  $("#gone").textContent = why || "";
  $("#gone").hidden = !why;
  if (hashID() !== null) history.replaceState(null, "", location.pathname);
}

async function deleteMessage() {
  if (selected === null) return;
  const r = await fetch("/api/v1/messages/" + encodeURIComponent(selected), { method: "DELETE" });
  if (r.ok) closeMessage("");
  await loadList();
}

function codeClass(reply) {
  return "code" + (reply[0] === "2" || reply[0] === "4" || reply[0] === "5" ? reply[0] : "4");
}

// loadTimeline shows, per recipient, every RCPT and DATA answer about it:
// "451 greylist → 4.1 s later 250 → 0.0 s later 250", and the reports
// sent about it after the 250: "→ 2.0 s later bounce 5.1.1".
const timelineStages = ["rcpt", "data", "bounce", "complaint"];

async function loadTimeline(m) {
  const blocks = [];
  for (const rcpt of m.to) {
    const { attempts } = await getJSON("/api/v1/attempts?rcpt=" + encodeURIComponent(rcpt));
    const steps = attempts.filter((a) => timelineStages.includes(a.stage));
    const summary = [];
    const items = steps.map((a, i) => {
      const report = a.stage === "bounce" || a.stage === "complaint";
      const code = report ? a.stage + " " + a.command.split(" ")[1] : a.reply.split(" ")[0];
      const gap = i === 0 ? "" : ((new Date(a.time) - new Date(steps[i - 1].time)) / 1000).toFixed(1) + " s later ";
      summary.push((i === 0 ? "" : "→ " + gap) + code + (a.by ? " " + a.by : ""));
      const li = el("li", { className: report ? "report" : codeClass(a.reply) }, clock(a.time) + "  " + a.command + "  " + a.reply);
      if (a.by) li.append(el("span", { className: "by" }, a.by));
      return li;
    });
    blocks.push(el("div", { className: "rcpt" },
      el("div", {}, el("span", { className: "who" }, rcpt), "  ", el("span", { className: "summary" }, summary.join(" "))),
      el("ul", { className: "steps" }, ...items)));
  }
  $("#timeline").replaceChildren(...blocks);
}

async function loadScript() {
  if (scriptDirty) return;
  const r = await fetch("/api/v1/script", { cache: "no-store" });
  $("#script").value = await r.text();
}

async function saveScript() {
  const status = $("#script-status");
  const r = await fetch("/api/v1/script", { method: "PUT", body: $("#script").value });
  const text = (await r.text()).trim();
  if (r.ok) {
    scriptDirty = false;
    $("#script").value = text + (text ? "\n" : "");
    status.className = "ok";
    status.textContent = "Saved: in force for the next command.";
  } else {
    status.className = "error";
    try { status.textContent = JSON.parse(text).error; } catch { status.textContent = text; }
  }
}

async function refresh() {
  refreshPending = false;
  await loadList();
  await loadScript();
  if (selected !== null) await loadTimeline(await getJSON("/api/v1/messages/" + encodeURIComponent(selected)).catch(() => ({ to: [] })));
}

// scheduleRefresh coalesces bursts of events into one refresh.
function scheduleRefresh() {
  if (refreshPending) return;
  refreshPending = true;
  setTimeout(() => refresh().catch((e) => { $("#live").textContent = String(e); }), 150);
}

function start() {
  $("#script").addEventListener("input", () => { scriptDirty = true; $("#script-status").textContent = "unsaved"; $("#script-status").className = ""; });
  $("#save-script").addEventListener("click", () => saveScript());
  $("#reset").addEventListener("click", async () => {
    await fetch("/api/v1/messages", { method: "DELETE" });
    closeMessage("");
  });
  $("#delete").addEventListener("click", () => deleteMessage());
  let searchTimer = null;
  $("#search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => loadList().catch((e) => { $("#live").textContent = String(e); }), 150);
  });
  const follow = () => { const id = hashID(); if (id !== null) openMessage(id); };
  window.addEventListener("hashchange", follow);
  follow();
  const events = new EventSource("/api/v1/events");
  events.addEventListener("change", scheduleRefresh);
  events.onopen = () => { $("#live").textContent = "live"; };
  events.onerror = () => { $("#live").textContent = "disconnected, retrying…"; };
  scheduleRefresh();
}

start();
