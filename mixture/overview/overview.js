// The overview page's behaviour: theme toggle, domain search, open/close all, anchors, "show all".
(() => {
  "use strict";
  const root = document.documentElement;
  const THEME_KEY = "mixture-overview-theme";
  const system = window.matchMedia("(prefers-color-scheme: dark)");
  const themeButton = document.getElementById("theme");
  const storage = () => { try { return window.localStorage; } catch (e) { return null; } };
  const saved = storage() && storage().getItem(THEME_KEY);
  if (saved === "dark" || saved === "light") root.dataset.theme = saved;
  const isDark = () => (root.dataset.theme ? root.dataset.theme === "dark" : system.matches);
  const showTheme = () => {
    themeButton.textContent = isDark() ? "Light theme" : "Dark theme";
    themeButton.setAttribute("aria-pressed", String(isDark()));
  };
  themeButton.addEventListener("click", () => {
    root.dataset.theme = isDark() ? "light" : "dark";
    try { storage() && storage().setItem(THEME_KEY, root.dataset.theme); } catch (e) { /* private mode */ }
    showTheme();
  });
  system.addEventListener("change", showTheme);
  showTheme();

  const panels = Array.from(document.querySelectorAll("details.domain"));
  const index = document.getElementById("index");
  const entries = new Map(Array.from(index.querySelectorAll("li")).map((li) => [li.dataset.domain, li]));
  // what each domain is searched by (mixture.composition.figures.search_index, written by the page's writer):
  // one field per reason a domain matches; the same rule as match_domains there
  const fields = index.dataset.fields.split("|").map((f) => f.split(":"));
  const search = document.getElementById("search");
  const shown = document.getElementById("shown");
  const match = (li, words) => {
    const found = words.map((w) => fields.filter(([f]) => (li.dataset["s" + f[0].toUpperCase() + f.slice(1)] || "").includes(w)));
    if (!found.every((where) => where.length)) return null;
    return fields.filter(([f]) => found.some((where) => where.some(([g]) => g === f))).map(([, name]) => name);
  };
  const filter = () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let n = 0;
    for (const p of panels) {
      const entry = entries.get(p.dataset.domain);
      const why = entry && words.length ? match(entry, words) : [];
      const hit = why !== null;
      p.hidden = !hit;
      if (entry) {
        entry.hidden = !hit;
        entry.querySelector(".why").textContent = hit && why.length ? `matched in ${why.join(", ")}` : "";
      }
      if (hit) n += 1;
    }
    const total = shown.dataset.total;
    shown.textContent = words.length ? `${n} of ${total} domains match` : `${total} domains`;
  };
  search.addEventListener("input", filter);
  document.getElementById("open-all").addEventListener("click", () => {
    for (const p of panels) if (!p.hidden) p.open = true;
  });
  document.getElementById("close-all").addEventListener("click", () => {
    for (const p of panels) p.open = false;
  });

  // #domain-NN opens a domain, #cNNqQ its cell too; both scroll to what they name. An anchor that names nothing
  // of this store says so, as the explorer does for the same link.
  const problem = document.getElementById("link-problem");
  const tell = (id) => {
    problem.hidden = !id;
    if (!id) return;
    const cell = /^c\d+q\d+$/i.test(id);
    const domain = /^domain-\d+$/i.test(id);
    const what = cell ? "names no cell of this store" : domain ? "names no domain of this store"
      : "is not a domain (#domain-NN) or a cell (#cNNqQ)";
    problem.textContent = `The link's #${id} ${what}: ${problem.dataset.scope}.`;
    problem.scrollIntoView({ block: "start" });
  };
  const go = (hash) => {
    let id = "";
    try { id = decodeURIComponent(hash.replace(/^#/, "")); } catch (e) { tell(hash.replace(/^#/, "")); return; }
    const el = id && document.getElementById(id);
    if (!el) { tell(id); return; }
    tell("");
    const panel = el.closest("details.domain");
    if (panel) {
      if (panel.hidden) { search.value = ""; filter(); }
      panel.open = true;
    }
    if (el.matches("details.cell")) el.open = true;
    el.scrollIntoView({ block: "start" });
  };
  window.addEventListener("hashchange", () => go(window.location.hash));
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#']");
    if (link && link.getAttribute("href") === window.location.hash) go(window.location.hash);
    const more = event.target.closest("button.more");
    if (more) {
      const open = more.closest(".doc").classList.toggle("expanded");
      more.textContent = open ? more.dataset.less : more.dataset.more;
    }
    const full = event.target.closest("a.more.full");
    // a whole text beside the page, read from where the page is served; from disk (file://) the browser lets
    // the page read no file: the link then opens the text on its own
    if (full && window.location.protocol !== "file:") {
      event.preventDefault();
      showFull(full);
    }
  });
  const showFull = (link) => {
    const doc = link.closest(".doc");
    const pre = doc.querySelector("pre.text");
    if (doc.classList.contains("expanded")) {
      doc.classList.remove("expanded");
      link.textContent = link.dataset.more;
      return;
    }
    const open = (text) => {
      let whole = doc.querySelector("pre.whole");
      if (!whole) {
        whole = document.createElement("pre");
        whole.className = "text whole";
        whole.textContent = text;  // text, never HTML
        pre.after(whole);
      }
      doc.classList.add("expanded");
      link.textContent = link.dataset.less;
    };
    if (doc.querySelector("pre.whole")) { open(""); return; }
    link.textContent = "loading…";
    fetch(link.getAttribute("href"), { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`${r.status} ${r.statusText}`))))
      .then(open)
      .catch((e) => { link.textContent = `${link.dataset.more}: could not be read (${e.message})`; });
  };
  go(window.location.hash);
})();
