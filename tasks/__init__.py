"""Stage logic, one package per pipeline stage, in pipeline order.

corpus -> graph -> qa -> env -> distill -> export, plus ops (doctor and smoke checks).
Each package's ``__init__`` says what goes in and what comes out.
"""
