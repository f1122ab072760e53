"""The HTML view of a run: built from real scripted runs of the graph (with the memory log and
each turn's prompt composition the graph records), checked by parsing the page (every turn,
every memory version with its diff, escaping) and in headless Chromium (no console errors,
charts with a size)."""

from __future__ import annotations

import copy
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import turns_to_finalize
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph
from ima.runs.outputs import design_checks, usage_totals
from ima.tasks import Task
from ima.view import render_view, write_view

CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = "<script>alert('pwned')</script>"


# --- realistic input: the real graph with the scripted model -------------------------------


def scripted_run(
    task: Task, memory_mode: str = "intrinsic", model: str = "scripted", **settings: Any
) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """Run the graph in memory; returns (run record as in run.json, final state, graph)."""
    graph = compile_graph(task, memory_mode, checkpointer=InMemorySaver())  # type: ignore[arg-type]
    context = RunContext(model=model, long_term=False, **settings)
    values = graph.invoke({}, {"configurable": {"thread_id": "view-test"}}, context=context)
    final = values.get("final") or {}
    run = {
        "thread_id": "view-test",
        "status": values["status"],
        "task": {"id": task.id, "version": task.version, "fingerprint": task.fingerprint},
        "memory_mode": memory_mode,
        "settings": {k: v for k, v in context.model_dump().items() if k != "principal"},
        "turns": len(values["transcript"]),
        "wall_seconds": 12.5,
        "usage": usage_totals(values["usage"]),
        "design_checks": design_checks(final.get("spec")),
        "roles": {r.id: r.name for r in task.roles},
    }
    return run, values, graph


def without_view_log(values: dict[str, Any]) -> dict[str, Any]:
    """The state of a run recorded before the memory log and the prompt composition."""
    old = {k: v for k, v in values.items() if k != "memory_log"}
    old["transcript"] = [
        {k: v for k, v in t.items() if k != "context"} for t in values["transcript"]
    ]
    return old


@pytest.fixture(scope="module")
def finished(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    run, values, _ = scripted_run(task, token_budget=1760)
    return run, values


# --- an HTML parser that keeps what the tests look at ---------------------------------------


class Page(HTMLParser):
    """Elements by id, classes, text per element id, and every text inside <script>."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.ids: dict[str, dict[str, str]] = {}
        self.text_by_id: dict[str, str] = {}
        self.links_in: dict[str, list[str]] = {}  # element id -> hrefs of links inside it
        self.scripts: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._open_ids: list[tuple[str, str]] = []  # (tag, id) of open elements with an id
        self._in_script = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag == "script":
            self._in_script = True
        if tag == "a":
            for _, element_id in self._open_ids:
                self.links_in.setdefault(element_id, []).append(attributes.get("href", ""))
        if "id" in attributes:
            assert attributes["id"] not in self.ids, f"duplicate id {attributes['id']}"
            self.ids[attributes["id"]] = attributes | {"tag": tag}
            self.text_by_id[attributes["id"]] = ""
            self._open_ids.append((tag, attributes["id"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if self._open_ids and self._open_ids[-1][0] == tag:
            self._open_ids.pop()

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)
        for _, element_id in self._open_ids:
            self.text_by_id[element_id] += data

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.tags if name in a.get("class", "").split()]


# --- unit tests on the document -------------------------------------------------------------


def test_every_turn_is_shown_in_order_with_speaker_phase_and_flags(finished):
    run, values = finished
    page = Page(render_view(run, values))
    turns = [a["id"] for a in page.with_class("turn")]
    assert turns == [f"turn-{t['index']}" for t in values["transcript"]]
    for turn in values["transcript"]:
        text = " ".join(page.text_by_id[f"turn-{turn['index']}"].split())
        assert turn["speaker"] in text and turn["phase"] in text
        assert " ".join(turn["content"].split()) in text
        for flag in turn["flags"]:
            assert flag in text
        assert page.ids[f"turn-{turn['index']}"]["data-agent"] == turn["speaker"]
    finalize = [t for t in values["transcript"] if "FINALIZE" in t["flags"]]
    assert finalize and page.with_class("flag-finalize")
    assert len(page.with_class("flag-accept")) >= sum(
        "ACCEPT" in t["flags"] for t in values["transcript"]
    )
    speaker = next(a for _, a in page.tags if a.get("title") == "Conversation Delegation Agent")
    assert "speaker" in speaker["class"]  # the role's name on the speaker of each turn


def test_every_memory_version_is_shown_with_its_diff_and_a_link_to_its_turn(finished):
    run, values = finished
    page = Page(render_view(run, values))
    agents = {role: i for i, role in enumerate(run["roles"])}
    for entry in values["memory_log"]:
        anchor = f"mem-{agents[entry['role']]}-v{entry['version']}"
        assert anchor in page.ids, anchor
        text = page.text_by_id[anchor]
        for line in entry["text"].splitlines():
            assert line in text
        if entry["version"]:
            assert f"turn {entry['turn']}" in text
            # the version links to the turn that caused the rewrite, and the turn links back
            assert f"#turn-{entry['turn']}" in page.links_in[anchor]
            assert f"#{anchor}" in page.links_in[f"turn-{entry['turn']}"]
    # a diff marks the lines that changed: CDA's second version adds the turn-3 line
    cda = [e for e in values["memory_log"] if e["role"] == "CDA"]
    before, after = cda[1]["text"].splitlines(), cda[2]["text"].splitlines()
    added = [line for line in after if line not in before]
    removed_or_added = {a["class"] for a in page.with_class("line") if a["class"] != "line same"}
    assert added and {"line added"} <= removed_or_added
    assert page.with_class("removed")  # the generic memory drops old lines as it grows
    assert "template generic" in " ".join(page.text_by_id["agent-0"].split())


def test_an_update_that_changed_nothing_keeps_its_version_and_own_items_in_view_are_shown(
    finished, task
):
    """The memory log keeps every update; one that changed nothing (an unusable answer)
    repeats its version, and the page still gives every element its own id."""
    run, values = copy.deepcopy(finished)
    last = next(e for e in reversed(values["memory_log"]) if e["role"] == "CDA")
    values["memory_log"].append(last | {"turn": last["turn"] + 1})
    page = Page(render_view(run, values, task))  # the parser refuses a repeated id
    cda = list(run["roles"]).index("CDA")
    assert f"mem-{cda}-v{last['version']}-t{last['turn'] + 1}" in page.ids
    shown = " ".join(page.text_by_id["in-view"].split())
    assert "Own items in view at each agent's last turn" in shown
    assert all(role in shown for role in ("CDA", "BOA", "DEA", "ERA"))


def test_model_and_user_text_is_escaped_everywhere(finished):
    run, values = copy.deepcopy(finished)
    values["transcript"][0]["content"] = f"Plan: {SCRIPT} & <b>bold</b>"
    values["memory_log"][-1]["text"] = f"- note {SCRIPT}"
    values["intrinsic_memory"]["CDA"]["text"] = f"final {SCRIPT}"
    values["final"]["markdown"] = f"## Summary\n\n{SCRIPT}\n\n<img src=x onerror=alert(1)>"
    values["final"]["spec"]["pipeline_name"] = SCRIPT
    run["roles"]["CDA"] = "<i>Chair</i>"
    html = render_view(run, values)
    page = Page(html)
    assert len([tag for tag, _ in page.tags if tag == "script"]) == 1  # the page's own only
    assert not any("pwned" in s for s in page.scripts)
    assert not [a for tag, a in page.tags if tag in ("img", "i") or "onerror" in a]
    assert SCRIPT in page.text_by_id["turn-1"]  # shown as text
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    assert SCRIPT in page.text_by_id["design"] and SCRIPT in page.text_by_id["spec"]


def test_page_is_self_contained_and_locks_down_what_may_load(finished):
    page = Page(render_view(*finished))
    csp = next(
        a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    for tag, attributes in page.tags:
        assert "src" not in attributes or attributes["src"].startswith("data:"), tag
        assert "style" not in attributes, tag  # the policy blocks inline styles
        if tag == "link":
            pytest.fail("external stylesheet")
        assert not attributes.get("href", "#").startswith(("http:", "https:", "//")), attributes


def test_context_composition_is_charted_and_tabled(finished):
    run, values = finished
    page = Page(render_view(run, values))
    chart = page.ids["context-chart"]
    assert chart["tag"] == "figure"
    rows = [i for i in page.ids if i.startswith("prompt-")]
    assert len(rows) == len(values["transcript"])
    late = values["transcript"][-1]["context"]
    first, last = late["history_turns"]
    row = " ".join(page.text_by_id[f"prompt-{values['transcript'][-1]['index']}"].split())
    assert f"{first}\N{EN DASH}{last}" in row and f"/ {late['budget']:,}" in row
    assert first > 1  # the budget cut the oldest turns: the window is visible


def test_usage_and_outcome_sections(finished):
    run, values = finished
    page = Page(render_view(run, values))
    kinds = " ".join(page.text_by_id["usage-by-kind"].split())
    assert "agent turns" in kinds and "memory updates" in kinds and "documentation" in kinds
    total = run["usage"]["total"]
    assert f"{total['input_tokens'] + total['output_tokens']:,}" in kinds
    by_agent = page.text_by_id["usage-by-agent"]
    assert all(role in by_agent for role in run["roles"])
    for chart in ("turn-chart", "cumulative-chart", "agent-chart"):
        assert chart in page.ids
    design = page.text_by_id["design"]
    assert "Summary" in design and "High-level plan" in design
    assert "the design above, as data" in page.text_by_id["spec"]
    assert '"components"' in page.text_by_id["spec"]
    record = page.text_by_id["run-record"]
    for expected in ("scripted", "finalized", "1760", "data-pipeline v3"):
        assert expected in record


def test_markdown_is_rendered_as_html(finished):
    run, values = copy.deepcopy(finished)
    values["final"]["markdown"] = "## Plan\n\n| item | TB |\n|---|--:|\n| raw | 80 |\n\n- **bold**"
    page = Page(render_view(run, values))
    tags = [t for t, _ in page.tags]
    assert {"h2", "table", "td", "strong", "li"} <= set(tags)
    assert ("td", {"class": "align-right"}) in page.tags  # a class, not a blocked style


def test_baseline_run_renders_without_memories(task):
    run, values, _ = scripted_run(task, memory_mode="none")
    page = Page(render_view(run, values))
    assert "no intrinsic memory" in page.text_by_id["memory-note"]
    assert not page.with_class("timeline")
    assert len(page.with_class("turn")) == len(values["transcript"])


def _middle_of(graph: Any) -> dict[str, Any]:
    """The state of the run after about ten turns, as a run in progress has it."""
    config = {"configurable": {"thread_id": "view-test"}}
    return next(
        s.values
        for s in graph.get_state_history(config)
        if 8 <= len(s.values.get("transcript", [])) <= 12
    )


def test_run_in_progress_renders_what_exists(task):
    _, _, graph = scripted_run(task, token_budget=1760)
    values = _middle_of(graph)
    run = {"thread_id": "view-test", "status": "running", "memory_mode": "intrinsic"}
    page = Page(render_view(run, values))
    assert "No final design yet" in " ".join(page.text_by_id["in-progress"].split())
    assert len(page.with_class("turn")) == len(values["transcript"])
    assert len(page.with_class("version")) == len(values["memory_log"])
    assert len([i for i in page.ids if i.startswith("prompt-")]) == len(values["transcript"])
    assert "design" not in page.ids and "memory-note" not in page.ids


def test_old_run_without_memory_log_or_prompt_composition_says_so(task):
    _, _, graph = scripted_run(task, token_budget=1760)
    values = without_view_log(_middle_of(graph))
    page = Page(render_view({"thread_id": "view-test", "status": "running"}, values))
    assert len(page.with_class("turn")) == len(values["transcript"])
    assert "not recorded" in page.text_by_id["memory-note"]
    assert "not recorded" in page.text_by_id["context-note"]
    assert len(page.with_class("timeline")) == len(
        values["intrinsic_memory"]
    )  # final memories shown
    assert not page.with_class("version")


def test_show_json_output_renders(finished, task):
    """`ima show THREAD --json` prints usage as totals and turns with a `turn` key."""
    values = finished[1]
    shown = {
        "transcript": [t | {"turn": t["index"]} for t in values["transcript"]],
        "intrinsic_memory": values["intrinsic_memory"],
        "usage": usage_totals(values["usage"]),
        "final": values["final"],
    }
    page = Page(render_view({"thread_id": "x"}, shown))
    assert len(page.with_class("turn")) == len(values["transcript"])
    assert "memory updates" in page.text_by_id["usage-by-kind"]


def test_write_view_is_atomic(finished, tmp_path, monkeypatch):
    out = write_view(*finished, tmp_path / "view.html")
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert [p.name for p in tmp_path.iterdir()] == ["view.html"]

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(UserError, match=r"cannot write .*other\.html: No space left on device"):
        write_view(*finished, tmp_path / "other.html")
    assert [p.name for p in tmp_path.iterdir()] == ["view.html"]  # no temporary file left
    with pytest.raises(UserError, match="does not exist"):
        write_view(*finished, tmp_path / "missing" / "view.html")


# --- a real browser ------------------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.slow
def test_view_renders_in_chromium_without_errors(finished, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium not installed: apt-get install -y chromium")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    expect = playwright.expect
    path = write_view(*finished, tmp_path / "view.html")
    problems: list[str] = []
    requests: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1366, "height": 900},
        )
        try:
            page = browser.new_page()
            page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            for chart in page.locator("svg.chart").all():
                box = chart.bounding_box()
                assert box and box["width"] > 100 and box["height"] > 100
            assert page.locator("svg.chart").count() == 4
            assert page.locator("svg.chart rect").count() > 3 * len(finished[1]["transcript"])

            # the filters work: hide CDA, then only the consensus phase
            turns = page.locator("li.turn")
            visible = lambda: sum(t.is_visible() for t in turns.all())  # noqa: E731
            everyone = visible()
            page.click("#filters .chip[data-agent='CDA']")
            cda = sum(t["speaker"] == "CDA" for t in finished[1]["transcript"])
            assert visible() == everyone - cda
            page.select_option("#phase-filter", "consensus")
            expect(page.locator("#filter-count")).to_have_text(re.compile(r"^\d+ of \d+ turns$"))
            # a link to a turn the filter hides shows it again (hashchange is asynchronous:
            # expect() waits for it)
            page.evaluate("location.hash = '#turn-1'")
            expect(page.locator("#turn-1")).to_be_visible()
            # memory: one agent at a time; a turn's memory link opens that agent's version
            assert page.locator("#memory article.timeline:visible").count() == 1
            page.locator("#turn-2 a.mem-link").click()
            expect(page.locator("#mem-1-v1")).to_be_visible()
            expect(page.locator("#memory .tab[aria-selected='true']")).to_have_text("BOA")

            shot = tmp_path / "view.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 50_000
            target = os.environ.get("IMA_VIEW_SCREENSHOT")
            if target:  # regenerate docs/view.png: IMA_VIEW_SCREENSHOT=docs/view.png
                page.goto(path.as_uri())
                chart = page.locator("#context-chart").bounding_box()
                bottom = chart["y"] + chart["height"] + 24
                page.screenshot(
                    path=target,
                    full_page=True,
                    clip={"x": 0, "y": 0, "width": 1366, "height": bottom},
                )
        finally:
            browser.close()
    assert not problems, problems
    assert all(url.startswith(("file:", "data:", "about:")) for url in requests), requests


def test_ima_view_writes_the_page_of_a_run(cli, tmp_path, task, db_target):
    db = ["--db", db_target]
    code, out, _ = cli("run", "--model", "scripted", "--thread", "v1", "--no-long-term", *db)
    assert code == 0 and "ima view v1 --open" in out  # the run says how to look at it
    code, out, _ = cli("view", "v1", *db)
    page = tmp_path / "runs" / "v1" / "view.html"
    assert code == 0 and str(page) in out
    html = page.read_text()
    assert "Conversation Delegation Agent" in html  # role names from the task
    assert html.count('<li class="turn ') == turns_to_finalize(task)  # every turn, once
    assert "Cumulative tokens of agent turns and memory updates" in html
    assert "round 1" in html  # each turn shows the round of its phase
    other = tmp_path / "elsewhere.html"
    assert cli("view", "v1", "--out", str(other), *db)[0] == 0 and other.exists()
    code, _, err = cli("view", "ghost", *db)
    assert code == 2 and "unknown thread 'ghost'" in err
    code, _, err = cli("view", "v1", "--out", str(tmp_path / "no" / "such" / "dir" / "v.html"), *db)
    assert code == 2 and "does not exist" in err and "Traceback" not in err
