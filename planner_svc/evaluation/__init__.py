"""Plan quality on questions with gold evidence: the planner against a naive baseline."""
