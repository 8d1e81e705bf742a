"""Stand-ins for optional multimodal packages the trainer environments leave out.

PyPI's torchvision/torchaudio builds do not match the CPU torch wheel and break ``transformers`` imports, so the
environments uninstall them (``training.envs``). LLaMA-Factory still imports ``torchaudio`` at module level in its
multimodal plugin (only audio datasets use it): an empty module lets text-only training import. Importing this
module changes nothing when the real package is installed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types


def _stub(name: str) -> None:
    if name in sys.modules or importlib.util.find_spec(name) is not None:
        return
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__doc__ = f"empty stand-in for {name} (not installed: text-only training does not use it)"
    sys.modules[name] = module


_stub("torchaudio")

