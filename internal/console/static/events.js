// The event page's live rows: long-polls /ui/events/feed (the admin API's
// wait=) and adds each event at the top. Rows are built with textContent
// only, so nothing from an event is ever parsed as HTML.
"use strict";
(function () {
  const table = document.getElementById("events");
  const live = document.getElementById("live");
  if (!table) return;
  const body = table.tBodies[0];
  const type = table.dataset.type || "";
  let after = table.dataset.after || "";
  const cell = (row, text) => { const td = row.insertCell(-1); td.textContent = text || ""; return td; };
  const show = (ev) => {
    const row = body.insertRow(0);
    cell(row, (ev.time || "").replace("T", " ").replace(/\.\d+/, ""));
    cell(row, ev.type);
    const id = cell(row, "");
    if (ev.queue_id) {
      const a = document.createElement("a");
      a.href = "/ui/message/" + encodeURIComponent(ev.queue_id);
      a.textContent = ev.queue_id;
      id.appendChild(a);
    }
    cell(row, ev.recipient);
    cell(row, ev.reply).className = "reply";
    while (body.rows.length > 500) body.deleteRow(-1);
  };
  const poll = async () => {
    for (;;) {
      try {
        const q = new URLSearchParams({after: after, type: type});
        const r = await fetch("/ui/events/feed?" + q, {credentials: "same-origin", cache: "no-store"});
        if (!r.ok) throw new Error("HTTP " + r.status);
        const page = await r.json();
        live.textContent = "live";
        live.className = "good";
        for (const ev of page.events || []) show(ev);
        if (page.next) after = page.next;
      } catch (e) {
        live.textContent = "disconnected (" + e.message + "); retrying";
        live.className = "bad";
        await new Promise((ok) => setTimeout(ok, 5000));
      }
    }
  };
  poll();
})();
