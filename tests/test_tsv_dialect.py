"""Triples TSV follows one stated dialect (``tasks.graph.importers.read_triples``; docs/graphs.md): CSV quoting,
tab-delimited. A field that starts with ``"`` is quoted, ``""`` is one quote inside it; a quote anywhere else is
kept as written. A tab or newline in a quoted name is a ``bad_name`` row, text after a closing quote a
``bad_quote`` row, and a quote never closed stops the import with one line naming where it opened."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tasks.graph.importers import TSV_FIELD_LIMIT, GraphImportError, read_triples

GOOD = "Ada Lovelace\tworked with\tCharles Babbage\n"


def _read(tmp_path: Path, text: str):
    path = tmp_path / "t.tsv"
    path.write_text(text, encoding="utf-8")
    return read_triples(path, "cs")


def _triples(imported) -> list[tuple[str, str, str]]:
    return [(r.source, r.relation, r.target) for r in imported.relations]


def _names(imported) -> set[str]:
    return {e.name for e in imported.entities}


def test_quoted_fields_and_doubled_quotes(tmp_path):
    imported = _read(tmp_path, '"Paris"\tcapital_of\t"France"\n'
                               '"The ""Boss"""\trecorded\t"Born to Run"\n'
                               '"""Quoted"" at both ends"\tnamed\t""""\n')  # fmt: skip
    assert _triples(imported) == [("Paris", "capital_of", "France"), ('The "Boss"', "recorded", "Born to Run"),
                                  ('"Quoted" at both ends', "named", '"')]  # fmt: skip
    assert imported.errors == []


def test_a_name_that_merely_contains_a_quote_is_kept_as_written(tmp_path):
    imported = _read(tmp_path, '12" ruler\tmeasured by\tO"Neil\n'
                               'Dwayne "The Rock" Johnson\tstarred in\tMoana "2"\n'
                               ' "Ada"\tknew\tBabbage\n')  # fmt: skip
    assert _triples(imported) == [('12" ruler', "measured by", 'O"Neil'),
                                  ('Dwayne "The Rock" Johnson', "starred in", 'Moana "2"'),
                                  ('"Ada"', "knew", "Babbage")]  # fmt: skip
    assert imported.errors == []


def test_a_quoted_tab_is_a_bad_name_not_two_fields(tmp_path):
    imported = _read(tmp_path, GOOD + '"Ada\tLovelace"\tknew\tBabbage\n' + "Babbage\tbuilt\tDifference Engine\n")
    assert [(e.line, e.reason_code) for e in imported.errors] == [(2, "bad_name")]
    assert "'Ada\\tLovelace'" in imported.errors[0].message
    assert _triples(imported) == [("Ada Lovelace", "worked with", "Charles Babbage"),
                                  ("Babbage", "built", "Difference Engine")]  # fmt: skip


def test_a_quoted_newline_is_one_bad_row_and_no_half_name_becomes_an_entity(tmp_path):
    """The case from the field: a name split over two lines by a quoted newline imported its second half."""
    imported = _read(tmp_path, GOOD + '"Alan Turing and Ada\nma"\tknew\tBabbage\n' + "Babbage\tbuilt\tEngine\n")
    assert [(e.line, e.reason_code) for e in imported.errors] == [(2, "bad_name")]
    assert "lines 2-3" in imported.errors[0].message
    assert _names(imported) == {"Ada Lovelace", "Charles Babbage", "Babbage", "Engine"}
    assert not any('"' in n or "ma" == n for n in _names(imported))


def test_text_after_a_closing_quote_is_a_row_error_and_the_next_rows_read(tmp_path):
    imported = _read(tmp_path, '"Weird Al" Yankovic\tsang\tEat It\n' + GOOD)
    assert [(e.line, e.reason_code) for e in imported.errors] == [(1, "bad_quote")]
    assert "closing quote" in imported.errors[0].message
    assert _triples(imported) == [("Ada Lovelace", "worked with", "Charles Babbage")]
    assert imported.rows_read == 2 and imported.bad_rows == 1


@pytest.mark.parametrize("after", ["", "Babbage\tbuilt\tEngine\n", 'Babbage\tbuilt\t"Engine"\n'])
def test_an_unbalanced_quote_stops_the_import_naming_its_line(tmp_path, after):
    with pytest.raises(GraphImportError) as err:
        _read(tmp_path, GOOD + '"Ada Lovelace\tknew\tBabbage\n' + after)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{tmp_path / 't.tsv'}:2: the quoted field opened on line 2 is not "
                                                "closed")
    assert '""' in line and "\t" not in line
    assert ("the file ends inside it" if '"' not in after else "the next quote, on line 3, is followed by text") in line


def test_a_quote_left_open_does_not_swallow_a_big_file(tmp_path):
    rows = "".join(f"n{i}\tnext\tn{i + 1}\n" for i in range(TSV_FIELD_LIMIT // 10))
    with pytest.raises(GraphImportError) as err:
        _read(tmp_path, GOOD + '"open\tr\tt\n' + rows)
    assert f"t.tsv:2: the quoted field opened on line 2 is not closed (still open after {TSV_FIELD_LIMIT:,} " \
           "characters)" in str(err.value)


def test_comments_and_headers_around_quotes(tmp_path):
    imported = _read(tmp_path, 'head\trelation\ttail\n# a comment\t"with an open quote\n"#hashtag"\ttagged\tpost\n'
                               "\n" + GOOD)  # fmt: skip
    assert _triples(imported) == [("#hashtag", "tagged", "post"), ("Ada Lovelace", "worked with", "Charles Babbage")]
    assert imported.errors == [] and imported.rows_read == 2


def test_graph_import_of_an_unbalanced_quote_is_one_line_and_exit_2(prefect_harness, tmp_path):
    bad = tmp_path / "t.tsv"
    bad.write_text(GOOD + '"Ada Lovelace\tknew\tBabbage\n' + "Babbage\tbuilt\tEngine\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flows.cli", "graph", "import", str(bad), "-d", "cs"],
                          capture_output=True, text=True, timeout=300)
    flat = " ".join(done.stderr.split())
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    assert f"{bad}:2: the quoted field opened on line 2 is not closed" in flat and "Traceback" not in done.stderr
