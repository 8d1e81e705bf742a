"""Code checks of a generated question: the path is real, the answer is its end, the question names the start
and hides every other path node, and the graph has no shorter way to the answer.

Every check returns a ``schemas.qa.Verdict`` naming the check, its reject code and a sentence that also serves
as retry feedback for the generator (``feedback_text``).

Name matching (``mentions``) is what the leak and start checks rest on. Text and names are cut into word
tokens after folding (Unicode NFKC, accents removed, curly quotes and dashes unified, possessive "'s" dropped,
punctuation as separators), and a name is mentioned when its token sequence occurs in the text's token
sequence. Consequences, each deliberate:

- case, punctuation, quotes, dashes and accents do not matter ("jean paul sartre" mentions "Jean-Paul Sartre",
  "Gödel's" mentions "Godel");
- matches are whole words: "Java" is not in "JavaScript", "Rome" not in "Romeo", "C" not in "C++"
  ("+" and "#" stay part of a word);
- a plural or singular form of the last word counts ("Turing machines" mentions "Turing machine");
- a name has variants (``name_variants``): without a trailing parenthesis ("Queen (band)" -> "Queen"), the
  short form inside one ("Food and Agriculture Organization (FAO)" -> "FAO", and the long form when the
  outer name is the short one), the head before a comma when it has two or more words ("King's College,
  Cambridge" -> "King's College"), and the initials of a name of three or more capitalised words
  ("Massachusetts Institute of Technology" -> "MIT");
- an all-capitals single-word variant (an acronym: "WHO", "IT", "FAO", "C") matches only in capitals, so
  "who" and "it" in ordinary prose are not mentions;
- a mention that lies inside a mention of an allowed name is not a leak: naming the start node "New York Times"
  does not leak an intermediate node "New York";
- a name written as an identifier is also mentioned by its display form (``tasks.meaning.names``):
  "element ion or isotope" names ``element_ion_or_isotope``, "clinical drug" names ``clinicalDrug``, "Albert
  Einstein" names ``dbr:Albert_Einstein``, and a mid by the graph's name for it (``TextIndex`` ``aliases``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.programs import QueryProgram
from schemas.qa import CHECK_CODES, CheckName, HopClass, RejectReason, Verdict
from schemas.meaning import relation_key
from tasks.graph.kg import KnowledgeGraph, normalize_name
from tasks.meaning.names import (display_name, generic_name_words, is_identifier, name_carries, name_made_of,
                                 node_display, question_name, strip_disambiguator)
from tasks.meaning.profiles import ProfileBook, book_for_graph, edge_label
from tasks.qa.programs import relation_index, stands
from tasks.qa.template_writer import date_in_words

# -- tokens -----------------------------------------------------------------------------------------------------------
_QUOTES = "\"'`´‘’‚‛“”„‟‹›«»′″‵‶＂＇"
_DASHES = "‐‑‒–—―−⁃﹘﹣－"
_FOLD = str.maketrans({**{q: "'" for q in _QUOTES}, **{d: "-" for d in _DASHES}, "\u00ad": None})
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# A CJK character alone (those scripts have no spaces between words), or a run of letters and digits with any
# trailing "+" / "#" ("C++", "C#", "F#" are names, and must differ from "C" and "F").
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+[+#]*")
# Possessives: "Turing's" -> "Turing", "Jesus'" -> "Jesus". Applied after quotes are folded to "'".
_POSSESSIVE = re.compile(r"(?<=\w)'s\b|(?<=s)'(?!\w)", re.IGNORECASE)
_STOPWORDS = frozenset({"of", "and", "the", "for", "in", "on", "at", "to", "a", "an", "de", "du", "des", "la", "le", "&"})


def _fold(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).translate(_FOLD)
    t = _POSSESSIVE.sub("", t)
    if t.isascii():  # nothing to strip; skipping the per-character pass halves the cost of a check
        return t
    # Accents off: decompose, drop combining marks, recompose what is left.
    t = "".join(ch for ch in unicodedata.normalize("NFKD", t) if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", t)


def raw_tokens(text: str) -> list[str]:
    """The words of ``text`` after folding, case kept."""
    return _WORD.findall(_fold(text))


def tokens(text: str) -> list[str]:
    """The words of ``text`` after folding, case folded: what names are matched on."""
    return [t.casefold() for t in raw_tokens(text)]


@dataclass(frozen=True)
class Variant:
    """One way a name can be written: its folded tokens, whether it must match case-sensitively (then
    ``raw`` holds the tokens as written), and whether the last word may change number."""

    tokens: tuple[str, ...]
    raw: tuple[str, ...]
    case_sensitive: bool
    number_variants: bool


def _is_acronym(raw: Sequence[str]) -> bool:
    return len(raw) == 1 and raw[0].isupper()


def _looks_short_form(raw: Sequence[str]) -> bool:
    """One word with two or more capitals or digits ("FAO", "UNESCO", "GPT4", "iOS")."""
    return len(raw) == 1 and sum(1 for ch in raw[0] if ch.isupper() or ch.isdigit()) >= 2


def _variant(raw: Sequence[str]) -> Variant | None:
    raw = tuple(raw)
    if not raw:
        return None
    cs = _is_acronym(raw)
    last = raw[-1]
    return Variant(
        tokens=tuple(t.casefold() for t in raw), raw=raw, case_sensitive=cs,
        number_variants=not cs and last.isalpha() and len(last) >= 3,
    )  # fmt: skip


_PAREN_TAIL = re.compile(r"^(?P<outer>.*?)\s*\((?P<inner>[^()]*)\)\s*$")


@lru_cache(maxsize=65536)
def name_variants(name: str) -> tuple[Variant, ...]:
    """Every variant of ``name`` that counts as a mention of it (see the module docstring), full name first,
    repeats dropped. An empty tuple for a name without any word."""
    found: list[tuple[str, ...]] = []

    def add(text: str) -> None:
        raw = tuple(raw_tokens(text))
        if raw and raw not in found:
            found.append(raw)

    add(name)
    folded = unicodedata.normalize("NFKC", name).strip()
    m = _PAREN_TAIL.match(folded)
    if m:
        outer, inner = m.group("outer").strip(), m.group("inner").strip()
        outer_raw, inner_raw = raw_tokens(outer), raw_tokens(inner)
        if outer_raw:
            add(outer)
        if _looks_short_form(inner_raw):
            add(inner)  # "Food and Agriculture Organization (FAO)"; not a disambiguator like "(band)"
        elif _looks_short_form(outer_raw) and len(inner_raw) >= 2:
            add(inner)  # "FAO (Food and Agriculture Organization)": the long form is inside
        base = outer or folded
    else:
        base = folded
    if "," in base:
        head = base.split(",", 1)[0]
        if len(raw_tokens(head)) >= 2:
            add(head)
    words = raw_tokens(base.split(",", 1)[0])
    significant = [w for w in words if w.casefold() not in _STOPWORDS]
    if len(significant) >= 3 and all(w[0].isupper() for w in significant):
        add("".join(w[0] for w in significant))

    said = date_in_words(name)
    if said != name:  # an ISO date, which a question says in words: "2001-04-06" as "6 April 2001"
        add(said)
    shown = display_name(name)
    if shown != name:  # an identifier: its display form and that form's own variants count too
        for v in name_variants(shown):
            if v.raw not in found:
                found.append(v.raw)

    out: list[Variant] = []
    for raw in found:
        v = _variant(raw)
        if v is not None:
            out.append(v)
    return tuple(out)


def _number_forms(word: str) -> set[str]:
    """``word`` and its obvious plural / singular forms (folded)."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("y") and len(word) > 3:
        forms.add(word[:-1] + "ies")
    if word.endswith("ies") and len(word) > 4:
        forms.add(word[:-3] + "y")
    if word.endswith("es") and len(word) > 4:
        forms.add(word[:-2])
    if word.endswith("s") and len(word) > 3:
        forms.add(word[:-1])
    return forms


class TextIndex:
    """A text cut into tokens once, for many name lookups (the leak checks look up every path node).

    ``aliases``: other ways to write a name that ``name_variants`` cannot know (a mid's name from the graph,
    ``tasks.meaning.names.node_display``); a mention of an alias is a mention of the name."""

    def __init__(self, text: str, *, aliases: Mapping[str, Iterable[str]] | None = None) -> None:
        self.text = text
        self.aliases: dict[str, tuple[str, ...]] = {
            k: tuple(a for a in v if a and a.strip() and a != k) for k, v in (aliases or {}).items()
        }
        self.raw: list[str] = raw_tokens(text)
        self.folded: list[str] = [t.casefold() for t in self.raw]
        self.positions: dict[str, list[int]] = {}
        for i, t in enumerate(self.folded):
            self.positions.setdefault(t, []).append(i)

    def spans(self, name: str) -> list[tuple[int, int]]:
        """Token spans ``[i, j)`` where some variant of ``name`` occurs, sorted, repeats dropped."""
        out: set[tuple[int, int]] = set()
        n = len(self.folded)
        variants = [v for form in (name, *self.aliases.get(name, ())) for v in name_variants(form)]
        for v in variants:
            k = len(v.tokens)
            if k > n:
                continue
            seq = self.raw if v.case_sensitive else self.folded
            want = v.raw if v.case_sensitive else v.tokens
            last_forms = _number_forms(want[-1]) if v.number_variants else {want[-1]}
            if k == 1:
                starts = sorted({i for f in last_forms for i in self.positions.get(f.casefold(), ())})
            else:
                starts = self.positions.get(v.tokens[0], [])
            head = list(want[:-1])
            for i in starts:
                if i + k > n:
                    continue
                if seq[i : i + k - 1] == head and seq[i + k - 1] in last_forms:
                    out.add((i, i + k))
        return sorted(out)

    def mentions(self, name: str, *, allowed: Iterable[str] = ()) -> bool:
        """Whether ``name`` occurs outside every mention of the ``allowed`` names."""
        spans = self.spans(name)
        if not spans:
            return False
        shield = [s for a in allowed for s in self.spans(a)]
        return any(not any(a <= i and j <= b for a, b in shield) for i, j in spans)


def mentions(text: str, name: str, *, allowed: Iterable[str] = ()) -> bool:
    """Whether ``text`` mentions ``name`` (module docstring), ignoring mentions inside ``allowed`` names."""
    return TextIndex(text).mentions(name, allowed=allowed)


# -- checks -----------------------------------------------------------------------------------------------------------
ShortcutPolicy = Literal["reject", "flag", "off"]


class CheckConfig(BaseModel):
    """Knobs of the code checks; checked when built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_nodes: int = Field(8, ge=4, description="Most path nodes a 3+ hop question may have.")
    shortcut: ShortcutPolicy = Field(
        "reject", description="reject: a shorter start-answer path rejects; flag: recorded only; off: not checked."
    )
    undirected: bool = Field(True, description="Adjacency and distances follow relations either way.")


HOP_NODES: dict[str, tuple[int, int | None]] = {"1-2": (2, 3), "3+": (4, None)}


def hop_class_bounds(hop_class: HopClass, max_nodes: int = 8) -> tuple[int, int]:
    """Smallest and largest number of path nodes of ``hop_class``."""
    lo, hi = HOP_NODES[hop_class]
    return lo, hi if hi is not None else max_nodes


def _v(check: CheckName, ok: bool, reason: str, *, blocking: bool = True) -> Verdict:
    return Verdict(check=check, ok=ok, code=None if ok else CHECK_CODES[check], reason=reason, blocking=blocking)


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)


def check_nodes_exist(kg: KnowledgeGraph, path: Sequence[str]) -> Verdict:
    unknown = [n for n in dict.fromkeys(path) if n not in kg]
    if unknown:
        return _v("nodes_exist", False, f"{_names(unknown)} {'is' if len(unknown) == 1 else 'are'} not a node of "
                  "the knowledge graph; use node names exactly as listed.")  # fmt: skip
    return _v("nodes_exist", True, "every path node is in the knowledge graph.")


def check_path_simple(path: Sequence[str]) -> Verdict:
    repeated = [n for n in dict.fromkeys(path) if path.count(n) > 1]
    if repeated:
        return _v("path_simple", False, f"the path visits {_names(repeated)} more than once; a path must not "
                  "repeat a node.")  # fmt: skip
    return _v("path_simple", True, "the path visits each node once.")


def check_path_connected(kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True) -> Verdict:
    """Consecutive nodes must be adjacent (either direction with ``undirected``). Assumes the nodes exist."""
    gaps = [(a, b) for a, b in zip(path, path[1:]) if not kg.has_edge(a, b, undirected=undirected)]
    if gaps:
        pairs = "; ".join(f"{a!r} and {b!r}" for a, b in gaps)
        return _v("path_connected", False, f"no relation joins {pairs}; each step of the path must follow a "
                  "relation listed in the knowledge graph.")  # fmt: skip
    return _v("path_connected", True, "every step of the path follows a relation of the knowledge graph.")


def check_answer_is_last(path: Sequence[str], answer: str) -> Verdict:
    if not path:
        return _v("answer_is_last_node", False, "the path is empty, so the answer cannot be its last node.")
    if normalize_name(answer) != normalize_name(path[-1]) or not normalize_name(answer):
        return _v("answer_is_last_node", False, f"the answer {answer!r} is not the last node of the path "
                  f"({path[-1]!r}); the answer must be the node the path ends at.")  # fmt: skip
    return _v("answer_is_last_node", True, "the answer is the last node of the path.")


def check_hop_count(path: Sequence[str], hop_class: HopClass, *, max_nodes: int = 8) -> Verdict:
    lo, hi = hop_class_bounds(hop_class, max_nodes)
    if not lo <= len(path) <= hi:
        return _v("hop_count", False, f"the path has {len(path)} nodes; a {hop_class} hop question needs "
                  f"{lo} to {hi} nodes.")  # fmt: skip
    return _v("hop_count", True, f"{len(path)} path nodes fit the {hop_class} hop class.")


def check_start_named(index: TextIndex, path: Sequence[str]) -> Verdict:
    if not path:
        return _v("start_named", False, "the path is empty, so the question cannot name its start node.")
    if not index.mentions(path[0]):
        return _v("start_named", False, f"the question does not name the start node {path[0]!r}; name it so the "
                  "answerer knows where to begin.")  # fmt: skip
    return _v("start_named", True, "the question names the start node.")


def _carried(index: TextIndex, start: str, name: str) -> bool:
    """Whether the start's name, as the question may write it, says ``name`` (``name_carries``: "Arlington (Texas)"
    says "Texas", "Borussia Dortmund v Hertha BSC Berlin" says "Borussia Dortmund"): a mention inside the start's
    name that still gives the node away."""
    return start != name and any(name_carries(s, n) for s in _forms(index, start) for n in _forms(index, name))


def _content_words(name: str) -> list[str]:
    """The folded words of a name without its disambiguating tail and without joining words."""
    return [w for w in tokens(strip_disambiguator(name) or name) if w not in _STOPWORDS]


def _near(a: str, b: str) -> bool:
    """The same word, or one spelling off another of five letters or more ("defense", "defence")."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1 or a[0] != b[0]:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def words_give_away(shown: str, answer: str) -> bool:
    """Whether a name the question shows gives ``answer`` away by its words: every word of the answer is a word of
    the shown name ("Nimzowitsch Defense, 2.Nc3" -> "Nimzowitsch Defence"; "S.Ct" -> "S. Ct."; "hardcore punk" ->
    "punk"), or the answer is the shown name and a common noun ("bento" -> "BENTO BOX", "Mexico" -> "Mexico City"). Spelling variants of
    one letter count as the same word; disambiguating tails and joining words are not read."""
    s, a = _content_words(shown), _content_words(answer)
    if not s or not a:
        return False
    if all(any(_near(w, x) for x in s) for w in a):
        return True
    if len(a) <= len(s) or not all(any(_near(w, x) for x in a) for w in s):
        return False
    # the answer's other words add only a common noun ("Mexico City", "BENTO BOX"), not a name of their own
    # ("Celtic v Rangers": the match whose home team is Celtic still needs the other side)
    shouted = answer.isupper()
    written = {t.casefold(): t for t in raw_tokens(strip_disambiguator(answer) or answer)}
    rest = [w for w in a if not any(_near(w, x) for x in s)]
    return all(w in COMMON_NAME_WORDS or shouted or written.get(w, w).islower() for w in rest)


#: The longest code of the answer (``answer_codes``) looked for in a question, in characters ("Lu", "NGM", "XBUD").
CODE_MAX_CHARS = 6
_CODE_WORD = re.compile(r"[A-Za-z0-9]+")


def answer_codes(kg: KnowledgeGraph, answer: str, skip: Iterable[str] = ()) -> list[str]:
    """The answer's own codes: short names of one word with a capital or a digit that a relation ties to the
    answer one to one (``RelationIndex.one_to_one``: "Lu", the symbol of lutetium; a market's abbreviation), other
    than the names in ``skip`` (the path and the pins, which the question says on purpose)."""
    if answer not in kg:
        return []
    index, skip, out = relation_index(kg), set(skip), []
    for name in kg.neighbor_names(answer):
        code = display_name(name).strip()
        if name in skip or len(code) > CODE_MAX_CHARS or not _CODE_WORD.fullmatch(code) or code.islower():
            continue
        keys = {relation_key(edge_label(e, e.source, e.target)[0]) for e in kg.relations_between(answer, name)}
        if any(k and index.one_to_one(k) for k in keys):
            out.append(code)
    return out


def check_answer_hidden(index: TextIndex, path: Sequence[str], answer: str, *, shown: Sequence[str] = (),
                        codes: Sequence[str] = ()) -> Verdict:
    """The question names neither the answer nor (inside the start's name) says it, the answer's name is not made
    of names the question shows (``shown``: the program's pin values; the start counts always), and no name the
    question shows holds one of the answer's own ``codes`` (``answer_codes``) as a word of its own, written as the
    graph writes it ("Lu K-M3" says lutetium by its symbol)."""
    allowed = path[:1]
    names = list(dict.fromkeys([answer, *path[-1:]] if len(path) > 1 else [answer]))
    leaked = [n for n in names if n.strip() and index.mentions(n, allowed=allowed)]
    if leaked:
        return _v("answer_hidden", False, f"the question reveals the answer {leaked[0]!r}; it must not be "
                  "named.")  # fmt: skip
    if path and any(_carried(index, path[0], n) for n in names):
        return _v("answer_hidden", False, f"the start's name {path[0]!r} says the answer {answer!r}: the question "
                  "gives it away; start from a node whose name does not carry the answer.")  # fmt: skip
    parts = [f for n in dict.fromkeys([*path[:1], *shown]) if n != answer and index.mentions(n)
             for f in _forms(index, n)]
    if parts and any(name_made_of(f, parts) for f in _forms(index, answer)):
        return _v("answer_hidden", False, f"the answer {answer!r} is named by the names the question shows; it is "
                  "read off the question.")  # fmt: skip
    giver = next((p for p in parts for f in _forms(index, answer) if words_give_away(p, f)), None)
    if giver is not None:
        return _v("answer_hidden", False, f"the name {giver!r} the question shows says the answer {answer!r} in "
                  "its words; it is read off the question.")  # fmt: skip
    code = next((c for c in codes if re.search(rf"(?<![\w-]){re.escape(c)}(?![\w])", index.text)), None)
    if code is not None:
        return _v("answer_hidden", False, f"the question shows {code!r}, which the graph ties to the answer "
                  f"{answer!r} one to one (its code or symbol); it is read off the question.")  # fmt: skip
    return _v("answer_hidden", True, "the question does not name the answer.")


def check_intermediates_hidden(index: TextIndex, path: Sequence[str]) -> Verdict:
    allowed = path[:1]
    leaked = [n for n in dict.fromkeys(path[1:-1]) if index.mentions(n, allowed=allowed)
              or (path and _carried(index, path[0], n))]
    if leaked:
        return _v("intermediates_hidden", False, f"the question reveals the intermediate node(s) {_names(leaked)};"
                  " describe them through their relations instead of naming them.")  # fmt: skip
    return _v("intermediates_hidden", True, "the question names no intermediate node.")


def check_no_shortcut(
    kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True, blocking: bool = True
) -> Verdict:
    """The start-to-answer distance must equal the path's hop count. Assumes a valid path."""
    hops = len(path) - 1
    dist = kg.shortest_path_length(path[0], path[-1], cutoff=hops, undirected=undirected)
    if dist is not None and dist < hops:
        return _v("no_shortcut", False, f"{path[-1]!r} is only {dist} hop(s) from {path[0]!r} in the knowledge "
                  f"graph, fewer than the path's {hops}; pick a path without a shorter way to its end.",
                  blocking=blocking)  # fmt: skip
    return _v("no_shortcut", True, f"no path shorter than {hops} hop(s) joins the start and the answer.",
              blocking=blocking)  # fmt: skip


def relation_chain(kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True,
                   limit: int = 50, book: ProfileBook | None = None) -> list[set[str]]:  # fmt: skip
    """What each hop of the path's relation chain can refer to, read from its start: at each hop, from every
    node reached so far, follow the relations with the hop's relation key (``tasks.meaning.profiles.edge_label``:
    the label, or a LightRAG relation's description phrase or keywords), read the same way (from the relation's
    subject or from its object; either way for a symmetric relation), to nodes of the next path node's type. Entry
    ``i`` is the set for ``path[i + 1]``. A question that describes the path hop by hop ("the food that
    hollandaise contains") means any node of that set, nodes of the path itself included: in "which organization
    was founded by the organization that founded IRRI", IRRI fits the last description as well as the one meant,
    and the text gives the reader no rule to leave it out. A hop whose relation has nothing to key on stays on the
    path's own node. A set stops growing at ``limit`` nodes. ``book`` says which relations are symmetric (default:
    the graph's profiles without a user file). Assumes a valid path."""
    book = book if book is not None else book_for_graph(kg)
    frontier = {path[0]}
    chain: list[set[str]] = []
    for a, b in zip(path, path[1:]):
        d = kg.edge(a, b, undirected=undirected)
        text, subject = edge_label(d, d.source, d.target) if d is not None else ("", "")
        key = relation_key(text) if text else ""
        reached: set[str] = set()
        if key:
            symmetric = book.profile(text).symmetric
            from_subject = subject == a
            want_type = kg.entity(b).type
            for node in sorted(frontier):
                for other, rel in kg.neighbors(node, undirected=undirected):
                    if other == node or kg.entity(other).type != want_type:
                        continue
                    t2, s2 = edge_label(rel, rel.source, rel.target)
                    if relation_key(t2) == key and (symmetric or (s2 == node) == from_subject):
                        reached.add(other)
                if len(reached) >= limit:
                    break
        frontier = reached or {b}
        chain.append(frontier)
    return chain


def singles_out(kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True,
                book: ProfileBook | None = None) -> bool:
    """Whether every step of the path's relation chain fits one node only (``check_answer_unique``)."""
    return all(len(fits) == 1 for fits in relation_chain(kg, path, undirected=undirected, book=book))


def check_answer_unique(kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True,
                        book: ProfileBook | None = None) -> Verdict:
    """Every node the question describes must be the only one its description fits (``relation_chain``). "The
    food that hollandaise contains" names one food only if hollandaise contains one; otherwise the reader cannot
    tell which is meant, and an answer reached through another of them is as right as the gold: the row would
    teach and reward it as wrong."""
    for node, fits in zip(path[1:], relation_chain(kg, path, undirected=undirected, book=book)):
        others = sorted(fits - {node})
        if others:
            shown = ", ".join(repr(o) for o in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            what = "the answer" if node == path[-1] else f"the step to {node!r}"
            return _v("answer_unique", False, f"{what} is not singled out: the same relation from the step before "
                      f"also leads to {shown}; pick a path whose relations each lead to one node.")  # fmt: skip
    return _v("answer_unique", True, "each relation of the path leads from the step before to one node only.")


def check_program_unique(kg: KnowledgeGraph, program: QueryProgram, path: Sequence[str], *,
                         book: ProfileBook | None = None) -> Verdict:
    """The program, executed on the graph (``tasks.qa.programs.stands``), reaches exactly one node at every step, and
    they are the path's nodes: the question's wording, chain and constraints together, has one answer in the
    graph."""
    book = book if book is not None else book_for_graph(kg)
    if list(program.nodes) != list(path):
        return _v("answer_unique", False, f"the program's chain {program.nodes} is not the path {list(path)}.")
    why = stands(program, relation_index(kg), book)
    if why is not None:
        return _v("answer_unique", False, f"the question's program does not single out one node: {why}.")
    return _v("answer_unique", True, "the question's program, executed on the graph, reaches one node at every step.")


def check_pins_named(index: TextIndex, program: QueryProgram) -> Verdict:
    """Every fact the program pins a node with is stated: the question names the pin's value. A question that leaves
    a pin out describes every node its chain alone reaches, and the program's uniqueness says nothing about it."""
    missing = [c.value for c in program.constraints if not index.mentions(c.value)]
    if missing:
        return _v("pins_named", False, f"the question does not state the fact(s) that single out the node meant: "
                  f"name {_names(list(dict.fromkeys(missing)))} as the program's pins say.")  # fmt: skip
    return _v("pins_named", True, "the question names the value of every fact its program pins a node with.")


def check_starts_at_seed(path: Sequence[str], seed: str) -> Verdict:
    """The path must start at the job's seed: the row records the seed, and splits link questions through it."""
    if not path or normalize_name(path[0]) != normalize_name(seed) or not normalize_name(seed):
        got = repr(path[0]) if path else "nothing"
        return _v("starts_at_seed", False, f"the path starts at {got}, not at {seed!r}; start the path at {seed!r}.")
    return _v("starts_at_seed", True, "the path starts at the seed entity.")


#: Words that may appear in a name yet say nothing about which entity it is (``names.yaml``'s ``generic`` and
#: ``heads``). A name word outside them, written capitalised in the question, points at that name.
COMMON_NAME_WORDS = generic_name_words()


def _distinctive_words(name: str, shield: frozenset[str]) -> list[str]:
    """Folded words of a multi-word ``name`` that single it out: not common, not the start entity's own, not a
    bare number, at least three characters. A one-word name has none (the whole-name checks cover it). An
    identifier's words are its display form's ("clinicalDrug" -> "clinical", "drug"; a URI's host and folders
    are not part of the name)."""
    words = raw_tokens(display_name(name))
    if len(words) < 2:
        return []
    out = []
    for w in words:
        f = w.casefold()
        if len(f) < 3 or f.isdigit() or f in COMMON_NAME_WORDS or f in shield:
            continue
        out.append(f)
    return list(dict.fromkeys(out))


def check_no_partial_leak(index: TextIndex, path: Sequence[str], answer: str, *, context: Iterable[str] = ()) -> Verdict:
    """A distinctive word (``_distinctive_words``) of the answer's or an intermediate node's name, written
    capitalised in the question outside the start entity's mention, leaks it: "the one tied to Tamsin?" with the
    answer "River Tamsin". Lower-case uses ("which physics prize" for "Nobel Prize in Physics") read as common
    nouns and pass; so does the question's first word, which is capitalised anyway. A word inside the whole
    mention of a ``context`` entity (an off-path neighbour the question names in full, "Alan Turing" beside a
    hidden "Turing Award") belongs to that name and passes; path nodes are never context."""
    if len(path) < 2:
        return _v("no_partial_leak", True, "no hidden node to leak.")
    start = path[0]
    shield = frozenset(t.casefold() for form in _forms(index, start) for t in raw_tokens(form))
    hidden = list(dict.fromkeys([*path[1:-1], answer, path[-1]]))
    on_path = {normalize_name(n) for n in [*path, answer]}
    named = [start, *(c for c in context if normalize_name(c) not in on_path)]
    spans = [sp for n in named for sp in index.spans(n)]
    for name in hidden:
        words = dict.fromkeys(w for form in _forms(index, name) for w in _distinctive_words(form, shield))
        for word in words:
            for i in index.positions.get(word, ()):
                if i == 0 or any(a <= i < b for a, b in spans):
                    continue
                written = index.raw[i]
                if written[:1].isupper() or any(ch.isdigit() for ch in written):
                    return _v("no_partial_leak", False, f"the question gives away {name!r} through the word "
                              f"{written!r}; describe it through its relations without any part of its name.")  # fmt: skip
    return _v("no_partial_leak", True, "no distinctive word of a hidden node's name is in the question.")


def run_checks(
    kg: KnowledgeGraph,
    path: Sequence[str],
    question: str,
    answer: str,
    hop_class: HopClass,
    *,
    config: CheckConfig | None = None,
    seed: str | None = None,
    book: ProfileBook | None = None,
    program: QueryProgram | None = None,
) -> list[Verdict]:
    """Every code check of one candidate, in ``schemas.qa.CheckName`` order (``starts_at_seed`` only with the
    job's ``seed``); ``book`` holds the job's relation profiles (``check_answer_unique``). With the ``program`` the
    question was written from, uniqueness is the program's execution (``check_program_unique``): its constraints
    pin what its chain alone leaves open.

    Graph checks that need real nodes (``path_connected``, ``no_shortcut``) are left out when some node is
    unknown, and ``no_shortcut`` is left out unless the path is simple and connected (a distance compared
    with a broken path means nothing); the other checks always run, so the feedback lists every problem at
    once. Names must be exact graph names: map a model's spelling first with ``resolve_path``.
    """
    cfg = config or CheckConfig()
    path = list(path)
    pins = [c.value for c in program.constraints] if program is not None else []
    index = TextIndex(question, aliases=display_aliases(kg, [*path, answer, *pins]))
    out: list[Verdict] = [check_nodes_exist(kg, path), check_path_simple(path)]
    exist = out[0].ok
    if exist:
        out.append(check_path_connected(kg, path, undirected=cfg.undirected))
    out.append(check_answer_is_last(path, answer))
    out.append(check_hop_count(path, hop_class, max_nodes=cfg.max_nodes))
    out.append(check_start_named(index, path))
    out.append(check_answer_hidden(index, path, answer, shown=pins,
                                   codes=answer_codes(kg, answer, [*path, *pins]) if answer in kg else ()))
    out.append(check_intermediates_hidden(index, path))
    structural = exist and out[1].ok and out[2].ok and len(path) >= 2
    if cfg.shortcut != "off" and structural:
        out.append(check_no_shortcut(kg, path, undirected=cfg.undirected, blocking=cfg.shortcut == "reject"))
        out.append(check_answer_unique(kg, path, undirected=cfg.undirected, book=book) if program is None
                   else check_program_unique(kg, program, path, book=book))
    if program is not None and program.constraints:
        out.append(check_pins_named(index, program))
    if seed is not None:
        out.append(check_starts_at_seed(path, seed))
    out.append(check_no_partial_leak(index, path, answer, context=_context_names(kg, path, index)))
    return out


def _forms(index: TextIndex, name: str) -> list[str]:
    """``name``, its display form and its aliases in ``index``: every way the question may write it."""
    return list(dict.fromkeys([name, display_name(name), *index.aliases.get(name, ())]))


def display_aliases(kg: KnowledgeGraph, names: Iterable[str]) -> dict[str, list[str]]:
    """For each of ``names`` the graph holds, the other ways a question writes it, as ``TextIndex`` aliases: an
    identifier's name from its name relation (``node_display``: "Barack Obama" names the node ``m.02mjmr``), and
    the template writer's form (``question_name``: "Richard Hamilton" names "Hamilton, Richard", "The Shining"
    names "Shining, The")."""
    out: dict[str, list[str]] = {}
    for n in dict.fromkeys(names):
        if not isinstance(n, str) or n not in kg:
            continue
        forms = []
        if is_identifier(n):
            shown = node_display(kg, n)
            if shown != display_name(n):
                forms.append(shown)
        written = question_name(kg, n)
        if written != n and written not in forms:
            forms.append(written)
        if forms:
            out[n] = forms
    return out


def _context_names(kg: KnowledgeGraph, path: Sequence[str], index: TextIndex, limit: int = 2000) -> list[str]:
    """Neighbours of the path that the question may name as context; only those sharing a word with the
    question are returned (the rest cannot shield anything), at most ``limit`` looked at per path node."""
    words = set(index.positions)
    out: list[str] = []
    for node in dict.fromkeys(path):
        if node not in kg:
            continue
        for name in kg.neighbor_names(node)[:limit]:
            if any(t in words for t in tokens(name)):
                out.append(name)
    return list(dict.fromkeys(out))


def passed(verdicts: Iterable[Verdict]) -> bool:
    """True when no verdict rejects (flagged, non-blocking failures do not)."""
    return not any(v.rejects for v in verdicts)


def reject_reason(verdicts: Iterable[Verdict]) -> RejectReason | None:
    """The code of the first rejecting verdict (checks run in a fixed order), or ``None``."""
    for v in verdicts:
        if v.rejects:
            return v.code
    return None


_PATH_CHECKS = frozenset({"nodes_exist", "path_simple", "path_connected", "answer_is_last_node", "hop_count",
                          "no_shortcut", "starts_at_seed"})  # fmt: skip


def feedback_text(verdicts: Sequence[Verdict]) -> str:
    """Retry feedback for the generator, in the shape of Omne-R1's prompt: path validity, then one line per
    failed check (its reason), path problems first. "" when nothing failed."""
    failed = [v for v in verdicts if not v.ok]
    if not failed:
        return ""
    path_bad = [v for v in failed if v.check in _PATH_CHECKS]
    question_bad = [v for v in failed if v.check not in _PATH_CHECKS]
    lines = [f"path validity: {not any(v.rejects for v in path_bad)}"]
    for v in path_bad:
        lines.append(f"- path: {v.reason}")
    if question_bad:
        lines.append("question feedback:")
        lines.extend(f"- {v.reason}" for v in question_bad)
    return "\n".join(lines)


def resolve_path(kg: KnowledgeGraph, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Map names as a model wrote them to graph names (``KnowledgeGraph.lookup``: exact, then by
    ``normalize_name``). Returns the path (unresolved names kept as written) and the unresolved names."""
    path: list[str] = []
    unknown: list[str] = []
    for n in names:
        hit = kg.lookup(n) if isinstance(n, str) else None
        if hit is None:
            unknown.append(n)
            path.append(n)
        else:
            path.append(hit)
    return path, unknown


__all__ = [
    "COMMON_NAME_WORDS",
    "CheckConfig",
    "TextIndex",
    "Variant",
    "check_answer_hidden",
    "check_answer_is_last",
    "check_hop_count",
    "check_intermediates_hidden",
    "check_no_shortcut",
    "check_no_partial_leak",
    "check_pins_named",
    "check_answer_unique",
    "relation_chain",
    "singles_out",
    "check_nodes_exist",
    "check_path_connected",
    "check_path_simple",
    "check_start_named",
    "check_starts_at_seed",
    "display_aliases",
    "feedback_text",
    "hop_class_bounds",
    "mentions",
    "name_variants",
    "passed",
    "raw_tokens",
    "reject_reason",
    "resolve_path",
    "run_checks",
    "tokens",
]
