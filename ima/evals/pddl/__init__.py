"""`ima bench pddl`: the paper's planning benchmark (Table 4): memory arms x problems x
seeds, each episode a checkpointed thread run by the evaluation queue's workers, then a
report with the paper's published figures beside ours."""
