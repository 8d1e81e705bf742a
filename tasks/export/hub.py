"""Publishing a dataset version to the Hugging Face Hub: one commit on ``main`` and one tag per version.

Each version is a whole export (``tasks.export.datasets``), so a version is published as a single commit that
replaces the data files on ``main`` (a commit is atomic on the Hub: it lands whole or not at all) and a tag named
after the version pointing at that commit, so ``load_dataset(repo, config, revision="<version>")`` keeps giving
the same rows after later versions land. A failed upload makes no commit: the previous version stays where it
was, on ``main`` and under its own tag.

Everything that can be checked without the network is checked by ``check_publish`` before any work starts (the
refresh flow calls it before its first LLM call): the repository id's form and the token's presence.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tasks.export.datasets import ExportError, verify_export

#: Remote files a new version replaces: data files and pictures of the previous version that the new one lacks
#: must not linger on ``main`` (the card and manifest are overwritten anyway).
REPLACED = ["**/*.parquet", "*.parquet", "pictures/**"]


class PublishError(ExportError):
    """Publishing cannot go ahead; the message says what to fix. Nothing was uploaded."""


class HubApi(Protocol):  # the part of huggingface_hub.HfApi used here (tests pass a recording fake)
    def create_repo(self, repo_id: str, **kw: Any) -> Any: ...
    def upload_folder(self, **kw: Any) -> Any: ...
    def create_tag(self, repo_id: str, **kw: Any) -> Any: ...


@dataclass(frozen=True)
class Published:
    repo_id: str
    revision: str  # the tag
    commit_url: str
    commit_oid: str | None


def check_repo_id(repo_id: str) -> str:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or not repo_id.strip():
        raise PublishError("the Hub repository id is empty; give 'namespace/name' (or leave it unset to not publish)")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise PublishError(f"{repo_id!r} is not a valid Hugging Face repository id: {exc}") from exc
    if "/" not in repo_id:
        raise PublishError(f"{repo_id!r}: give the repository as 'namespace/name' (your user or organisation name, "
                           "a slash, the dataset name)")  # fmt: skip
    return repo_id


def check_token(token_env: str) -> str:
    token = os.environ.get(token_env, "")
    if not token.strip():
        raise PublishError(f"a Hub repository is configured but the environment variable {token_env} holds no token: "
                           f"set {token_env} to a write token in the worker's environment, or unset the repository")  # fmt: skip
    return token


def check_publish(repo_id: str | None, token_env: str = "HF_TOKEN") -> None:
    """Raise ``PublishError`` for a publish setting that cannot work; nothing to check when ``repo_id`` is unset."""
    if repo_id is None:
        return
    check_repo_id(repo_id)
    check_token(token_env)


def publish_version(export_dir: str | Path, repo_id: str, *, token_env: str = "HF_TOKEN", private: bool = True,
                    api: HubApi | None = None) -> Published:
    """Upload one export as a commit on ``main`` and tag it with its version (module docstring)."""
    root = Path(export_dir)
    check_repo_id(repo_id)
    token = check_token(token_env)
    problems = verify_export(root)
    if problems:
        raise PublishError(f"refusing to publish {root}: " + "; ".join(problems[:5]))
    version = json.loads((root / "manifest.json").read_text(encoding="utf-8"))["version"]
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.upload_folder(
        repo_id=repo_id, folder_path=str(root), repo_type="dataset", revision="main",
        commit_message=f"hopforge dataset {version}", ignore_patterns=[".*"], delete_patterns=REPLACED,
    )  # fmt: skip
    oid = getattr(info, "oid", None)
    # The tag is what makes the version addressable forever; exist_ok covers a re-run after a crash that
    # happened between the commit and the tag.
    api.create_tag(repo_id, tag=version, revision=oid, repo_type="dataset", tag_message=f"hopforge dataset {version}",
                   exist_ok=True)  # fmt: skip
    return Published(repo_id=repo_id, revision=version, commit_url=str(getattr(info, "commit_url", info)),
                     commit_oid=oid)


__all__ = ["REPLACED", "HubApi", "PublishError", "Published", "check_publish", "check_repo_id", "check_token",
           "publish_version"]
