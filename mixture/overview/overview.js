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
  const entries = new Map(Array.from(document.querySelectorAll("#index li")).map((li) => [li.dataset.domain, li]));
  const search = document.getElementById("search");
  const shown = document.getElementById("shown");
  let haystacks = null;  // built on the first search: label, terms, numbers, sources and sample text of a panel
  const filter = () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (words.length && haystacks === null) {
      haystacks = new Map(panels.map((p) => [p, p.textContent.toLowerCase()]));
    }
    let n = 0;
    for (const p of panels) {
      const hit = words.every((w) => haystacks.get(p).includes(w));
      p.hidden = !hit;
      const entry = entries.get(p.dataset.domain);
      if (entry) entry.hidden = !hit;
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

  // #domain-NN opens a domain, #cNNqQ its cell too; both scroll to what they name
  const go = (hash) => {
    let id = "";
    try { id = decodeURIComponent(hash.replace(/^#/, "")); } catch (e) { return; }
    const el = id && document.getElementById(id);
    if (!el) return;
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
  });
  go(window.location.hash);
})();
