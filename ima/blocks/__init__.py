"""Intrinsic memory as parts of other people's graphs: a middleware for `create_agent`,
subagents as tools that carry their memory, and a wrapper for hand-built `StateGraph`s."""
