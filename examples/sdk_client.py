"""Drive a design run on a LangGraph server from Python with the LangGraph SDK.

    langgraph dev --port 8123 --no-browser        # in another terminal (see docs/studio.md)
    python examples/sdk_client.py http://127.0.0.1:8123 [--approve]

The run streams each agent turn and memory update, stops for your review before FINALIZE
(--approve approves without asking), and prints the final design. The server's settings
pick the model (IMA_MODEL, ima.toml).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

# Run settings: model, template, token_budget, turn_cap, seed, ... (the graph's context).
CONTEXT = {"review": True}


def stream(client: Any, thread_id: str, **run: Any) -> None:
    """Run the intrinsic-memory graph on the thread; print its progress until it stops."""
    parts = client.runs.stream(thread_id, "intrinsic", context=CONTEXT, stream_mode="custom", **run)
    for part in parts:
        if part.event == "error":
            sys.exit(f"run failed: {part.data}")
        if part.event != "custom":
            continue
        e = part.data
        if e["event"] == "turn":  # an agent spoke...
            flags = " ".join(e["flags"])
            print(f"turn {e['turn']:>3}  {e['speaker']:<4} {e['phase']:<11} {flags}".rstrip())
        elif e["event"] == "memory":  # ...and its memory was formed from what it said
            change = f"+{e.get('lines_added', 0)} -{e.get('lines_removed', 0)} lines"
            print(f"{'':10}{e['role']} memory v{e['version']}: {change}")


def review(client: Any, thread_id: str, approve: bool) -> dict[str, Any]:
    """Answer the review before FINALIZE until the run ends; the final state."""
    state = client.threads.get_state(thread_id)
    while state["interrupts"]:  # the team agreed: a person decides before FINALIZE
        asked = state["interrupts"][0]["value"]
        print(f"\n{asked['question']}\nvotes: {asked['votes']}")
        answer = "" if approve else input("Enter approves, or type feedback: ").strip()
        stream(
            client,
            thread_id,
            command={"resume": {"feedback": answer} if answer else {"approve": True}},
        )
        state = client.threads.get_state(thread_id)
    return state


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "url", help="the API address `langgraph dev` printed, e.g. http://127.0.0.1:8123"
    )
    parser.add_argument("--approve", action="store_true", help="approve the agreed design unasked")
    args = parser.parse_args()
    if not args.url.startswith(("http://", "https://")):
        parser.error(f"url {args.url!r} must start with http:// or https://")
    client = get_sync_client(url=args.url)
    try:
        thread_id = client.threads.create()["thread_id"]
        stream(client, thread_id, input={})  # or {"brief": "..."}: replaces the task's brief
        state = review(client, thread_id, args.approve)
    except httpx.HTTPError as exc:
        sys.exit(f"cannot reach the server at {args.url} ({type(exc).__name__}): is it running?")
    values = state["values"]
    final = values["final"]
    print(f"\nstatus {values['status']} after {len(values['transcript'])} turns")
    print(f"\n{final['markdown']}\n{json.dumps(final['spec'], indent=2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
