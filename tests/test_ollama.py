"""The Ollama backend over real HTTP, against a local server speaking Ollama's chat API."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from conftest import turns_to_finalize
from fake_ollama import FakeOllama
from tenacity import wait_none

from ima.meeting.design.parts import summary_schema


def meeting_responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """Answers like a cooperative agent, by reading the prompt as a model would."""
    prompt = messages[-1]["content"]
    if "# Update your memory" in prompt:
        latest = prompt.split("## Your latest turn", 1)[1].split("\n", 2)[-1]
        return "## Notes\n- " + " ".join(latest.split()[:20])
    if "Start your answer with the word FINALIZE" in prompt:
        return "FINALIZE. Everyone accepted."
    if "Start your answer with ACCEPT or REJECT" in prompt:
        return "**Accept.** The design meets my requirements."
    if "What design did the agents agree on?" in prompt:
        return "## Summary\nAgreed.\n\n## High-level plan\n1. Build.\n\n## Resource estimates\nOK."
    found = re.search(
        r"# Your role\nYou are .*? \((\w+)\)", "\n".join(m["content"] for m in messages)
    )
    role = found.group(1) if found else "The finaliser"
    return f"{role} proposes a managed EU pipeline within budget."


@pytest.fixture
def ollama(monkeypatch):
    # Retries keep LangChain's policy (which failures, how many attempts) without its
    # seconds of exponential backoff: the tests check that a call is retried, not how long
    # it waits.
    monkeypatch.setattr(
        "langchain_core.runnables.retry.wait_exponential_jitter", lambda **_: wait_none()
    )
    with FakeOllama(models={"tiny": meeting_responder}) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        yield server


def test_run_through_ollama_reports_the_servers_token_counts(cli, ollama, task):
    code, out, err = cli("run", "--model", "ollama:tiny", "--thread", "o1", "--json", "--seed", "3")
    assert code == 0, err
    record = json.loads(out)
    assert record["status"] == "finalized"
    total = record["usage"]["total"]
    server_counts = tuple(map(sum, zip(*ollama.counts, strict=True)))
    assert (total["input_tokens"], total["output_tokens"]) == server_counts  # not recounted
    assert total["estimated_calls"] == 0
    chats = ollama.chats
    assert all(c["options"]["seed"] == 3 and c["options"]["temperature"] == 0 for c in chats)
    # constrained JSON for the design's parts (Ollama `format`, through with_structured_output)
    assert chats[-1]["format"] == summary_schema()
    # output bounded: 1.5 x the word limit (the facilitator, who opens, has half of 80)
    assert chats[0]["options"]["num_predict"] == 60


def test_unreachable_server_is_a_one_line_error(cli, monkeypatch):
    with FakeOllama() as server:
        url = server.url
    monkeypatch.setenv("OLLAMA_HOST", url)  # nothing listens there any more
    code, _, err = cli("run", "--model", "ollama:tiny")
    assert code == 2 and f"cannot reach Ollama at {url}" in err and "ollama serve" in err


def test_unknown_model_lists_what_the_server_has(cli, ollama):
    code, _, err = cli("run", "--model", "ollama:llama3")
    assert code == 2
    assert "has no model 'llama3' (it has: tiny:latest)" in err and "ollama pull llama3" in err


def test_transient_server_errors_are_retried(cli, ollama):
    ollama.fail_next(2, status=503, message="server busy")
    code, out, err = cli("run", "--model", "ollama:tiny", "--json", "--turn-cap", "3")
    assert code == 0, err
    assert json.loads(out)["status"] == "turn_cap"


@pytest.mark.slow
def test_dead_server_mid_run_then_resume_loses_nothing(cli, ollama, task):
    answered = {"n": 0}
    stopper = threading.Thread(target=ollama.stop)

    def dying(messages, request):
        answered["n"] += 1
        if answered["n"] == 9:  # the server process dies in the middle of the conversation
            stopper.start()
        return meeting_responder(messages, request)

    ollama.models["tiny:latest"] = dying
    code, _, err = cli("run", "--model", "ollama:tiny", "--thread", "dies")
    assert code == 1
    assert "model server is unreachable" in err and "ima resume dies" in err
    assert "Traceback" not in err

    stopper.join()
    ollama.models["tiny:latest"] = meeting_responder
    ollama.start()
    code, out, err = cli("resume", "dies", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "finalized"
    shown = json.loads(cli("show", "dies", "--json")[1])
    assert [t["turn"] for t in shown["transcript"]] == list(range(1, turns_to_finalize(task) + 1))
    assert [t["speaker"] for t in shown["transcript"]][:10] == [
        "CDA",
        "BOA",
        "CDA",
        "DEA",
        "CDA",
        "MLA",
        "CDA",
        "IA",
        "KIA",
        "ERA",
    ]


def test_timeouts_stop_the_run_resumably(cli, ollama, monkeypatch):
    monkeypatch.setenv("IMA_CALL_TIMEOUT", "0.3")
    ollama.delay = 2
    code, _, err = cli("run", "--model", "ollama:tiny", "--thread", "slow")
    assert code == 1 and "timed out" in err and "ima resume slow" in err
