"""The docs' CLI reference (docs/hooks/cli_reference.py, run by MkDocs at every build): every command, option,
default and help text of the real CLI is on the page, a command added to a Typer app appears without anyone
regenerating anything, and README.md's links into docs/ point at files that exist."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Annotated, Optional

import pytest
import typer

ROOT = Path(__file__).resolve().parents[1]


def _load_hook():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load_hook()


def _sections(page: str) -> dict[str, str]:
    """Each command's section of the page, keyed by its command path ("hopforge qa generate")."""
    parts = re.split(r"^#{2,6} `([^`]+)`\s*$", page, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _walk(cmd, ctx, path):
    """(command path, command, context) for every visible command under ``cmd``, groups included."""
    yield " ".join(path), cmd, ctx
    if isinstance(cmd, typer.core.TyperGroup):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, sub.context_class(sub, info_name=name, parent=ctx), [*path, name])


def _plain(text: str) -> str:
    """Markdown escapes and line breaks taken out, to compare with the CLI's own strings."""
    return re.sub(r"\s+", " ", text.replace("\\", ""))


def test_every_command_option_default_and_help_of_the_cli_is_on_the_page():
    from flows.cli import app

    page = hook.render()
    sections = _sections(page)
    root = typer.main.get_command(app)
    seen = 0
    for path, cmd, ctx in _walk(root, root.context_class(root, info_name="hopforge"), ["hopforge"]):
        assert path in sections, f"no section for `{path}`"
        section = _plain(sections[path])
        first_line = (cmd.help or "").strip().splitlines()[0] if cmd.help else ""
        assert _plain(first_line) in section, (path, first_line)
        for param in cmd.params:
            record = param.get_help_record(ctx)
            if record is None:
                continue
            assert f"`{record[0]}`" in section, (path, record[0])
            if param.help:
                assert _plain(param.help) in section, (path, param.help)
            default = param.default
            if param.param_type_name == "option" and isinstance(default, (int, float, str)) \
                    and not isinstance(default, bool) and default != "":
                assert f"Default: `{default}`" in section, (path, param.name, default)
            seen += 1
    assert seen > 50  # the walk reached the options, not only the group headings


def test_a_new_command_group_and_its_options_appear_on_the_page():
    app = typer.Typer(help="A tool.")
    server = typer.Typer(help="Run the server.")
    app.add_typer(server, name="server")

    @server.command("start")
    def start(port: Annotated[int, typer.Option(help="Port to listen on.")] = 4200,
              host: Annotated[str, typer.Option(help="Set HOPFORGE_SERVER__HOST to change it | or this.")] = "127.0.0.1",
              tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="A tag")] = None) -> None:
        """Start the server, or say it is running."""

    @server.command("secret", hidden=True)
    def secret() -> None:
        """Never listed."""

    @app.command("restore")
    def restore(backup: Annotated[Path, typer.Argument(help="The backup file.")]) -> None:
        """Restore a backup."""

    page = hook.render(app, prog="tool")
    sections = _sections(page)
    assert set(sections) == {"tool", "tool server", "tool server start", "tool restore"}
    start_section = sections["tool server start"]
    assert "Start the server, or say it is running." in start_section
    assert "- `--port <int>`: Port to listen on. Default: `4200`." in start_section
    # Markdown specials in help text are escaped, so the setting name is not emphasis and the pipe is not a cell.
    assert r"HOPFORGE\_SERVER\_\_HOST to change it \| or this. Default: `127.0.0.1`." in start_section
    assert "- `-t, --tag <list[str]>`: A tag. Repeatable." in start_section
    assert "- `tool server start`: Start the server, or say it is running." in sections["tool server"]
    assert "secret" not in page and "Never listed" not in page
    assert "- `backup <path>`: The backup file. Required." in sections["tool restore"]


@pytest.mark.parametrize("note, sentence", [
    ("required", "Required."),
    ("default: 20", "Default: `20`."),
    ("x>=1", "Range: `x>=1`."),
    ("env var: HOPFORGE_X", "Environment variable: `HOPFORGE_X`."),
])
def test_bracketed_notes_of_the_help_become_sentences(note, sentence):
    help_text, notes = hook._split_help(f"Some help.  [{note}]")
    assert help_text == "Some help." and [hook._note(n) for n in notes] == [sentence]


def test_readme_links_into_docs_point_at_files_that_exist(tmp_path):
    assert hook.readme_link_problems(ROOT / "README.md", ROOT) == []
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# here\n")
    (tmp_path / "README.md").write_text("[ok](docs/here.md#top) and [gone](docs/gone.md)\n")
    assert hook.readme_link_problems(tmp_path / "README.md", tmp_path) == [
        "README.md:1: link to docs/gone.md, which does not exist"]
