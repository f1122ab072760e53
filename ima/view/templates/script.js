"use strict";
// Filters for the meeting (by agent, by phase), and links that reveal what they point to.
(function () {
  const turns = Array.from(document.querySelectorAll("li.turn"));
  const chips = Array.from(document.querySelectorAll("#filters .chip"));
  const phaseFilter = document.getElementById("phase-filter");
  const count = document.getElementById("filter-count");
  const noMatch = document.getElementById("no-match");
  const hiddenAgents = new Set();

  function apply() {
    let shown = 0;
    for (const turn of turns) {
      const visible =
        !hiddenAgents.has(turn.dataset.agent) &&
        (!phaseFilter.value || turn.dataset.phase === phaseFilter.value);
      turn.hidden = !visible;
      if (visible) shown += 1;
    }
    count.textContent = shown === turns.length ? "" : shown + " of " + turns.length + " turns";
    noMatch.hidden = shown > 0;
  }

  function showAll() {
    hiddenAgents.clear();
    for (const chip of chips) chip.setAttribute("aria-pressed", "true");
    phaseFilter.value = "";
    apply();
  }

  // Memory: one agent at a time when scripts run (every agent is listed without them).
  const tabs = Array.from(document.querySelectorAll("#memory .tab"));
  function selectTab(panelId) {
    for (const tab of tabs) {
      const selected = tab.dataset.panel === panelId;
      tab.setAttribute("aria-selected", String(selected));
      document.getElementById(tab.dataset.panel).hidden = !selected;
    }
  }
  if (tabs.length) {
    tabs[0].parentElement.hidden = false;
    for (const tab of tabs) tab.addEventListener("click", () => selectTab(tab.dataset.panel));
    selectTab(tabs[0].dataset.panel);
  }

  // A link to a turn hidden by the filter, to another agent's memory, or into a closed
  // <details>, shows what it points to.
  function reveal() {
    const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (!target) return;
    const panel = target.closest(".timeline");
    if (panel && tabs.length) selectTab(panel.id);
    if (target.hidden && phaseFilter) showAll();
    for (let node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    const inner = target.querySelector("details");
    if (inner) inner.open = true;
    target.scrollIntoView({ block: "start" });
  }

  if (phaseFilter) {
    for (const chip of chips) {
      chip.addEventListener("click", function () {
        const agent = chip.dataset.agent;
        if (hiddenAgents.has(agent)) hiddenAgents.delete(agent);
        else hiddenAgents.add(agent);
        chip.setAttribute("aria-pressed", String(!hiddenAgents.has(agent)));
        apply();
      });
    }
    phaseFilter.addEventListener("change", apply);
    document.getElementById("show-all").addEventListener("click", showAll);
    const expand = document.getElementById("expand-all");
    expand.addEventListener("click", function () {
      const open = expand.dataset.open !== "true";
      for (const details of document.querySelectorAll("details.long")) details.open = open;
      expand.dataset.open = String(open);
      expand.textContent = open ? "collapse long turns" : "expand long turns";
    });
  }
  window.addEventListener("hashchange", reveal);
  reveal();
})();
