"""Scripts that run inside the trainers' own environments (``training.envs``), never in hopforge's core.

They may import torch, transformers and the trainer; the core only writes their inputs and starts them.
"""
