// sitelore web UI: small progressive enhancement. Every page works without it.
"use strict";
document.documentElement.classList.add("js");

function resultLinks() {
  return Array.from(document.querySelectorAll("#results .result-link"));
}

// Search: "/" focuses the box; ArrowDown/ArrowUp (or j/k) move through the results.
document.addEventListener("keydown", (event) => {
  const box = document.getElementById("q");
  if (!box || event.altKey || event.ctrlKey || event.metaKey) return;
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (event.key === "/" && !typing) {
    event.preventDefault();
    box.focus();
    box.select();
    return;
  }
  const links = resultLinks();
  if (!links.length) return;
  const down = event.key === "ArrowDown" || (!typing && event.key === "j");
  const up = event.key === "ArrowUp" || (!typing && event.key === "k");
  if (!down && !up) return;
  if (typing && document.activeElement !== box) return;
  event.preventDefault();
  const at = links.indexOf(document.activeElement);
  if (down) links[Math.min(at + 1, links.length - 1)].focus();
  else if (at <= 0) box.focus();
  else links[at - 1].focus();
});

// Forms that ask first (delete) or take a while (source update).
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    return;
  }
  if (form.dataset.busy) {
    const button = form.querySelector("button");
    if (button) {
      button.disabled = true;
      button.textContent = form.dataset.busy;
    }
  }
});

// Crawl page: live progress from the job's server-sent events.
function text(id, value) {
  const node = document.getElementById(id);
  if (node) node.textContent = value;
}

function addRow(page) {
  const body = document.getElementById("p-rows");
  if (!body) return;
  const row = document.createElement("tr");
  const cell = document.createElement("td");
  if (page.documentId) {
    const link = document.createElement("a");
    link.href = "/documents/" + encodeURIComponent(page.documentId);
    link.textContent = page.url;
    cell.appendChild(link);
  } else {
    cell.textContent = page.url;
  }
  row.appendChild(cell);
  for (const value of [page.status || "—", page.outcome]) {
    const td = document.createElement("td");
    td.textContent = value;
    row.appendChild(td);
  }
  body.appendChild(row);
}

function showProgress(p) {
  text("p-status", p.status);
  const badge = document.getElementById("p-status");
  if (badge) badge.className = "badge " + p.status;
  text("p-done", p.done);
  text("p-indexed", p.indexed);
  text("p-errors", p.errors);
  text("p-skipped", p.skipped);
  if (p.current) text("p-current", p.current);
  const bar = document.getElementById("p-bar");
  if (bar) bar.value = p.done;
}

const panel = document.getElementById("progress");
if (panel && panel.dataset.running && window.EventSource) {
  const url = "/crawls/" + encodeURIComponent(panel.dataset.job) + "/progress?after=" + panel.dataset.after;
  const source = new EventSource(url);
  source.addEventListener("page", (event) => {
    const data = JSON.parse(event.data);
    showProgress(data.progress);
    addRow(data.page);
  });
  source.addEventListener("end", (event) => {
    source.close();
    showProgress(JSON.parse(event.data).progress);
    window.location.reload();
  });
}
