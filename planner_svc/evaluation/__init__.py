"""Plan quality on questions with gold evidence: the planner against two baselines.

``questions`` reads the question files; ``metrics`` scores plans and aggregates them (pure);
``cosine_baseline`` and ``bm25_baseline`` rank candidates and ``packing`` packs them under a
budget; ``server_plans`` asks a running server and recognises a decline; ``runner`` runs every
budget; ``report`` renders the tables and ``plot`` the sweep figure; ``cli`` is
``planner-svc eval``.
"""
