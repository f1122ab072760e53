"""Long-term memory across runs: private per agent role plus shared team memory, on a
LangGraph Store, behind one hub (see hub.py); governed (maturation, decay, retention,
screening) and inspectable (`ima memory`)."""

from ima.longterm.errors import (
    InvalidToken,
    LongTermError,
    MemoryUnavailable,
    Refused,
    ScopeViolation,
    UnknownItem,
    WriteConflict,
)
from ima.longterm.hub import Entry, MemoryHub
from ima.longterm.namespaces import default_principal, resolve_principal
from ima.longterm.pipeline import LlmDrafter, RunOutcome, learn, rule_drafter
from ima.longterm.policy import Limits, Policy, PolicySet, load_policy
from ima.longterm.retrieval import StartingMemory, starting_memory
from ima.longterm.runtime import (
    LongTermSession,
    check_settings,
    learn_from_run,
    load_starting_memory,
    open_long_term,
    open_session,
)

__all__ = [
    "Entry",
    "InvalidToken",
    "Limits",
    "LlmDrafter",
    "LongTermError",
    "LongTermSession",
    "MemoryHub",
    "MemoryUnavailable",
    "Policy",
    "PolicySet",
    "Refused",
    "RunOutcome",
    "ScopeViolation",
    "StartingMemory",
    "UnknownItem",
    "WriteConflict",
    "check_settings",
    "default_principal",
    "learn",
    "learn_from_run",
    "load_policy",
    "load_starting_memory",
    "open_long_term",
    "open_session",
    "resolve_principal",
    "rule_drafter",
    "starting_memory",
]
