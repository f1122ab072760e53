"""Graphs for the LangGraph server (`langgraph dev`), built by the same factory as the CLI.

The server supplies its own checkpointer, so these are compiled without one.
"""

from ima.graph.builder import compile_graph
from ima.tasks import load_task

intrinsic = compile_graph(load_task("data-pipeline"), "intrinsic")
baseline = compile_graph(load_task("data-pipeline"), "none")
