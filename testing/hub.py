"""A stand-in for ``huggingface_hub.HfApi`` for the publishing tests (``monkeypatch.setattr(huggingface_hub, "HfApi",
RecordingHub)``): it records every call and answers an upload with a commit, nothing leaves the machine."""

from __future__ import annotations

from typing import Any


class RecordingHub:
    """Every call of every instance goes to the class's ``calls`` as ``(method, keyword arguments)``; each instance is
    in ``instances`` with the ``token`` it was made with. ``fail_upload`` makes an upload raise (the Hub did not
    answer); an upload answers with a commit numbered by the uploads recorded so far (``oid`` ``000...1``,
    ``commit_url`` ``https://hub.test/commit/1``). ``reset()`` before each test."""

    calls: list[tuple[str, dict[str, Any]]] = []
    instances: list[RecordingHub] = []
    fail_upload = False

    @classmethod
    def reset(cls) -> None:
        cls.calls, cls.instances, cls.fail_upload = [], [], False

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        RecordingHub.instances.append(self)

    def create_repo(self, repo_id: str, **kw: Any) -> None:
        RecordingHub.calls.append(("create_repo", {"repo_id": repo_id, **kw}))

    def upload_folder(self, **kw: Any) -> Any:
        if RecordingHub.fail_upload:
            raise ConnectionError("the Hub did not answer")
        RecordingHub.calls.append(("upload_folder", kw))
        n = sum(1 for c in RecordingHub.calls if c[0] == "upload_folder")
        return type("CommitInfo", (), {"oid": f"{n:040x}", "commit_url": f"https://hub.test/commit/{n}"})()

    def create_tag(self, repo_id: str, **kw: Any) -> None:
        RecordingHub.calls.append(("create_tag", {"repo_id": repo_id, **kw}))
