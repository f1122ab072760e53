"""`ima bench ENV`: the planning benchmark harness, for every environment with an adapter
(`ima.planning.adapters`: pddl, the paper's Table 4; babyai; twc): memory arms x tasks x
seeds, each episode a checkpointed thread run by the evaluation queue's workers, then a
report with the oracle's row and, for PDDL, the paper's published figures beside ours."""
