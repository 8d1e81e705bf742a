"""The docs site's strict build fails on a broken link, as mkdocs.yml promises.

mkdocs.yml sets `strict: true` and `validation:` to warn on a link to a page that does not exist (`not_found`) and
on a link to an anchor a page lacks (`anchors`); its hook (docs/hooks/cli_reference.py) warns on a link from
README.md into docs/ that names no file. Each test builds a copy of the site's sources in its own folder with
`mkdocs build --strict` (the command `make docs` and CI run), so a change that loosens any of these settings fails
here, and the unmodified copy must build, so the failures are the links' doing. A build takes ~1-3 s.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs or mkdocs-material is not installed in this environment (the `docs` extra: `make docs` installs it)")


def _site(tmp_path: Path) -> Path:
    """A copy of what the build reads: mkdocs.yml, docs/ (pages, hooks) and README.md (the hook checks its links)."""
    site = tmp_path / "site-src"
    site.mkdir()
    shutil.copy2(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    shutil.copy2(ROOT / "README.md", site / "README.md")
    shutil.copytree(ROOT / "docs", site / "docs")
    return site


def _build(site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site / "out")],
                          cwd=site, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text + "\n", encoding="utf-8")


def test_the_config_makes_missing_pages_and_anchors_fail_the_build():
    """What the tests below rely on: strict, and both link checks at warning level (a warning fails --strict)."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # tags (none today) as text
    assert config["strict"] == "true"
    assert config["validation"]["not_found"] == "warn" and config["validation"]["anchors"] == "warn"
    assert "docs/hooks/cli_reference.py" in config["hooks"]


def test_the_unmodified_docs_build(tmp_path):
    site = _site(tmp_path)
    done = _build(site)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (site / "out" / "reference" / "cli" / "index.html").is_file()  # the hook's generated page


@pytest.mark.parametrize(("link", "warning"), [
    ("no-such-page.md", "Doc file 'getting-started.md' contains a link 'no-such-page.md', but the target is not "
                        "found among documentation files."),
    ("prefect.md#no-such-section", "Doc file 'getting-started.md' contains a link 'prefect.md#no-such-section', but "
                                   "the doc 'prefect.md' does not contain an anchor '#no-such-section'."),
], ids=["missing-page", "missing-anchor"])  # fmt: skip
def test_a_link_to_a_page_or_anchor_that_does_not_exist_fails_the_build(tmp_path, link, warning):
    site = _site(tmp_path)
    _append(site / "docs" / "getting-started.md", f"See [nowhere]({link}).")
    done = _build(site)
    assert done.returncode != 0
    assert warning in done.stderr
    assert "Aborted with 1 warnings in strict mode!" in done.stdout + done.stderr


def test_a_readme_link_into_docs_that_does_not_exist_fails_the_build(tmp_path):
    site = _site(tmp_path)
    readme = site / "README.md"
    _append(readme, "See [gone](docs/no-such-page.md).")
    lineno = len(readme.read_text(encoding="utf-8").splitlines())
    done = _build(site)
    assert done.returncode != 0
    assert f"README.md:{lineno}: link to docs/no-such-page.md, which does not exist" in done.stderr
    assert "Aborted with 1 warnings in strict mode!" in done.stdout + done.stderr
