"""A data dir that cannot be written (a read-only mount, an immutable folder, a full disk) is one clear error before
any work, through the CLI and through a flow, and the warehouse is left as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.config import load_settings
from schemas.errors import InputError

DEMO = Path(__file__).resolve().parents[2] / "flows" / "demo"


@pytest.fixture
def data_dir(tmp_path):
    from flows.graphs import import_graphs

    data = tmp_path / "data"
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=load_settings(data_dir=data))
    return data


def _immutable(path: Path, on: bool) -> bool:
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    return subprocess.run([chattr, "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


def test_an_immutable_data_dir_is_refused_by_the_cli_before_any_work(prefect_harness, data_dir, tmp_path,
                                                                     monkeypatch):
    monkeypatch.delenv("HOPFORGE_DATA_DIR", raising=False)  # the config file names the data dir
    config = tmp_path / "hopforge.toml"
    config.write_text(f'data_dir = "{data_dir.as_posix()}"\n', encoding="utf-8")
    before = (data_dir / "warehouse.duckdb").read_bytes()
    if not _immutable(data_dir, True):
        pytest.skip("chattr +i is not available here (it needs ext2/3/4 and CAP_LINUX_IMMUTABLE)")
    try:
        run = subprocess.run([sys.executable, "-m", "flows.cli", "export", "--config", str(config)],
                             capture_output=True, text=True, timeout=300)
    finally:
        _immutable(data_dir, False)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    # the export command checks its exports folder first: not there yet, so the data dir it would be made in
    assert f"the exports folder {data_dir}/exports cannot be written: {data_dir} is not writable" in run.stderr
    assert (data_dir / "warehouse.duckdb").read_bytes() == before


def test_a_flow_on_a_data_dir_it_cannot_write_fails_with_one_input_error(prefect_harness, data_dir, monkeypatch):
    """As a deployment calls it; the folder is made unwritable for this process by failing the probe file the way
    a read-only mount fails it (root ignores permission bits)."""
    import errno
    import tempfile

    from flows.export import export_datasets

    real = tempfile.mkstemp

    def read_only(*args, **kwargs):
        if Path(kwargs.get("dir") or "") == data_dir:
            raise OSError(errno.EROFS, "Read-only file system", str(data_dir))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    before = (data_dir / "warehouse.duckdb").read_bytes()
    with pytest.raises(InputError, match=r"the (data dir|exports folder) .* cannot be written: creating a file in "
                                         r".* failed \(Read-only file system\)"):
        export_datasets(settings=load_settings(data_dir=data_dir))
    assert (data_dir / "warehouse.duckdb").read_bytes() == before
