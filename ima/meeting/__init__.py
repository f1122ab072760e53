"""The meeting: the paper's case study as a LangGraph graph of role agents, each followed by
its own memory update (`builder.create_meeting`), its nodes (`nodes/`), the prompts its
agents see (`agent_context`, `prompting`) and the final document (`final_design`)."""
