"""QA stage: a graph snapshot in; seeds, QA attempts (accepted or rejected with a reason), QA rows,
splits and verified gold paths out.

``seeds`` samples seed nodes, ``candidates`` / ``context`` build the generator's view, ``generate`` runs the
generate-check-judge-retry loop, ``checks`` are the path and leak checks, ``dedup`` and ``splits`` keep the set
clean and leak-safe, ``gold_paths`` / ``gold_verify`` find and verify ground-truth paths, ``yields`` counts.
"""
