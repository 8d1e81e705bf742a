"""Export stage: warehouse tables in; a dataset version out (QA / paths Parquet, LLaMA-Factory ShareGPT and
``dataset_info.json``, verl RL Parquet, TRL messages, manifest and card).
"""
