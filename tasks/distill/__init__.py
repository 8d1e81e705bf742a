"""Distillation stage: QA rows, gold paths and the tool environment in; trajectory records (template,
teacher rollouts, single-pass long CoT), each checked and kept or rejected with a reason, out.
"""
