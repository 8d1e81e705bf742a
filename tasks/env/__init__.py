"""KG tool environment: a graph in; an index, tools with stable renderings, tool-call parsing and the
agent loop out. Shared by distillation, the tool server, RL rollouts and evaluation.
"""
