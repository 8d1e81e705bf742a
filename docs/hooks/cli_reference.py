"""The CLI reference page, written from the `hopforge` command itself at every docs build.

An MkDocs hook (`hooks:` in mkdocs.yml): `on_files` adds `reference/cli.md`, rendered by walking the Typer app's
command tree through the same help records `hopforge ... --help` prints, so a command, option, default or help text
added to `flows/cli.py` is in the next build without anyone regenerating a file. `on_pre_build` also checks that
every link from README.md into `docs/` names a file that exists, since README.md is outside the docs folder and
MkDocs would not see it.
"""

from __future__ import annotations

import inspect
import logging
import re
from pathlib import Path
from typing import Any

import typer

log = logging.getLogger("mkdocs.hooks.cli_reference")

PAGE = "reference/cli.md"
_SUFFIX = re.compile(r"\s*\[((?:default|env var): .*|required|[-\d.x<=> ]*x[-\d.x<=> ]*)\]\s*$")
_MD_SPECIAL = re.compile(r"([\\*_\[\]<>|])")
_README_LINK = re.compile(r"\]\((docs/[^)#\s]+)(#[^)\s]*)?\)")


def _escape(text: str) -> str:
    """Help text as Markdown shows it literally: special characters escaped outside `code spans`, so a setting
    name like HOPFORGE_ROLES__PROFILER__BASE_URL is not read as emphasis."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = _MD_SPECIAL.sub(r"\\\1", parts[i])
    return "`".join(parts)


def _split_help(record_help: str) -> tuple[str, list[str]]:
    """The help text of a parameter's help record, and its trailing notes ("default: 20", "required")."""
    notes: list[str] = []
    while (m := _SUFFIX.search(record_help)) is not None:
        notes.insert(0, m.group(1))
        record_help = record_help[: m.start()]
    return record_help.strip(), notes


def _note(part: str) -> str:
    """One of the notes `--help` puts in brackets after a parameter's help, as a sentence."""
    if part == "required":
        return "Required."
    for key, label in (("default: ", "Default"), ("env var: ", "Environment variable")):
        if part.startswith(key):
            return f"{label}: `{part.removeprefix(key)}`."
    return f"Range: `{part}`."


def _param_line(param: Any, ctx: Any) -> str:
    """One bullet: the option's names and value type as `--help` shows them, its help, default and whether it is
    required or repeatable."""
    record = param.get_help_record(ctx)
    if record is None:  # a hidden parameter
        return ""
    names, help_text = record
    help_text, notes = _split_help(help_text)
    if not help_text and param.help:
        help_text = param.help
    extras = [_note(part) for note in notes for part in note.split("; ")]
    if getattr(param, "multiple", False):
        extras.append("Repeatable.")
    if help_text and help_text[-1].isalnum():
        help_text += "."
    body = " ".join(x for x in (_escape(help_text), *extras) if x)
    return f"- `{names}`" + (f": {body}" if body else "")


def _command_section(cmd: Any, ctx: Any, path: list[str]) -> list[str]:
    """A heading per command with its help, usage line, arguments and options; groups list their commands and
    recurse into them."""
    name = " ".join(path)
    level = "#" * min(len(path) + 1, 6)
    lines = [f"{level} `{name}`", ""]
    help_text = inspect.cleandoc(cmd.help or "").split("\f")[0].strip()
    if help_text:
        lines += [_escape(help_text), ""]
    usage = cmd.get_usage(ctx).removeprefix("Usage: ").strip()
    lines += ["```text", usage, "```", ""]
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    options = [p for p in cmd.params if p.param_type_name == "option"]
    for title, params in (("Arguments", arguments), ("Options", options)):
        rendered = [line for line in (_param_line(p, ctx) for p in params) if line]
        if rendered:
            lines += [f"**{title}**", "", *rendered, ""]
    if isinstance(cmd, typer.core.TyperGroup):
        children = [(n, cmd.get_command(ctx, n)) for n in cmd.list_commands(ctx)]
        children = [(n, c) for n, c in children if c is not None and not c.hidden]
        lines += ["**Commands**", ""]
        for child_name, child in children:
            short = child.get_short_help_str(limit=120)
            lines.append(f"- `{name} {child_name}`: {_escape(short)}")
        lines.append("")
        for child_name, child in children:
            child_ctx = child.context_class(child, info_name=child_name, parent=ctx)
            lines += _command_section(child, child_ctx, [*path, child_name])
    return lines


def render(app: typer.Typer | None = None, prog: str = "hopforge") -> str:
    """The whole reference page as Markdown, from `app` (the project's CLI unless given)."""
    if app is None:
        from flows.cli import app
    cmd = typer.main.get_command(app)
    ctx = cmd.context_class(cmd, info_name=prog)
    header = [
        "# CLI reference",
        "",
        "Generated from the `hopforge` command itself (`flows/cli.py`) at every docs build, so it lists exactly the",
        "commands, options, defaults and help texts of the code it was built from. `hopforge COMMAND --help` prints",
        "the same.",
        "",
    ]
    return "\n".join(header + _command_section(cmd, ctx, [prog])).rstrip() + "\n"


def readme_link_problems(readme: Path, repo_root: Path) -> list[str]:
    """Links from README.md into docs/ whose target file does not exist, one line each."""
    if not readme.is_file():
        return []
    problems = []
    for lineno, line in enumerate(readme.read_text(encoding="utf-8").splitlines(), start=1):
        for m in _README_LINK.finditer(line):
            if not (repo_root / m.group(1)).exists():
                problems.append(f"README.md:{lineno}: link to {m.group(1)}, which does not exist")
    return problems


# Links MkDocs cannot check and that are known and kept: (page, link, why). Each is shown at INFO level instead of
# failing the build; every other unrecognised or missing link still fails it.
KNOWN_UNCHECKED_LINKS = [
    ("meaning/grades.md", "reports/",
     "a folder of plain-text reports; a folder link has no page to check (docs/meaning/ is kept as graded)"),
]


class _KnownLinks(logging.Filter):
    """Lowers MkDocs' warning for each link in KNOWN_UNCHECKED_LINKS to INFO, naming why it is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        for page, link, why in KNOWN_UNCHECKED_LINKS:
            if record.levelno == logging.WARNING and message.startswith(
                    f"Doc file '{page}' contains an unrecognized relative link '{link}'"):
                record.levelno, record.levelname = logging.INFO, "INFO"
                record.msg, record.args = f"{message} (kept: {why})", ()
        return True


def on_startup(command: str, dirty: bool) -> None:
    """Install the known-links filter on the logger MkDocs validates links with."""
    pages_log = logging.getLogger("mkdocs.structure.pages")
    if not any(isinstance(f, _KnownLinks) for f in pages_log.filters):
        pages_log.addFilter(_KnownLinks())


def on_pre_build(config: Any) -> None:
    """README.md is the front page on the forge; its links into docs/ must hold too (a warning fails --strict)."""
    root = Path(config.config_file_path).parent
    for problem in readme_link_problems(root / "README.md", root):
        log.warning(problem)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated CLI reference to the site's files before the nav is built."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files
