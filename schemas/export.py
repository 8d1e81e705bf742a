"""What an export can hold: its configs, named once for the export code, the flows and their parameter models."""

from __future__ import annotations

from typing import Literal, get_args

#: Every config an export can hold, in the order they are written and listed.
ExportConfig = Literal["qa", "sft", "sft_nothink", "rl", "messages"]
EXPORT_CONFIGS: tuple[str, ...] = get_args(ExportConfig)

__all__ = ["EXPORT_CONFIGS", "ExportConfig"]
