"""Drive a design run on a LangGraph server from Python with the LangGraph SDK.

    python examples/sdk_client.py URL [--approve]

URL is the API address `langgraph dev` printed. The run streams each agent turn and memory
rewrite, stops for your review before FINALIZE (--approve approves without asking), and
prints the final design. The server's settings pick the model (IMA_MODEL, ima.toml).
"""

import json
import sys

from langgraph_sdk import get_sync_client

url, approve = sys.argv[1], "--approve" in sys.argv[2:]
client = get_sync_client(url=url)
thread_id = client.threads.create()["thread_id"]
context = {"review": True}  # run settings: model, template, token_budget, turn_cap, seed, ...


def stream(**run):
    """Run the intrinsic-memory graph on the thread; print its progress until it stops."""
    parts = client.runs.stream(thread_id, "intrinsic", context=context, stream_mode="custom", **run)
    for part in parts:
        if part.event == "error":
            sys.exit(f"run failed: {part.data}")
        if part.event != "custom":
            continue
        e = part.data
        if e["event"] == "turn":  # an agent spoke...
            flags = " ".join(e["flags"])
            print(f"turn {e['turn']:>3}  {e['speaker']:<4} {e['phase']:<11} {flags}".rstrip())
        elif e["event"] == "memory":  # ...and rewrote its own memory from what it said
            change = f"+{e['lines_added']} -{e['lines_removed']} lines"
            print(f"{'':10}{e['role']} memory v{e['version']}: {change}")


stream(input={})  # or {"brief": "..."}: a brief that replaces the task's description
state = client.threads.get_state(thread_id)
while state["interrupts"]:  # the team agreed: a person decides before FINALIZE
    review = state["interrupts"][0]["value"]
    print(f"\n{review['question']}\nvotes: {review['votes']}")
    answer = "" if approve else input("Enter approves, or type feedback: ").strip()
    stream(command={"resume": {"feedback": answer} if answer else {"approve": True}})
    state = client.threads.get_state(thread_id)

final = state["values"]["final"]
print(f"\nstatus {state['values']['status']} after {len(state['values']['transcript'])} turns")
print(f"\n{final['markdown']}\n{json.dumps(final['spec'], indent=2)}")
