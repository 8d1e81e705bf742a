"""Questions as programs: execute them on a snapshot, pin one-of-many hops with constraints, sample them from a
seed's neighbourhood, and render them to SPARQL over the snapshot's RDF form.

**Execution** (``execute``). ``S0 = {start}``; step ``i`` follows its label (forward or inverse; either way when the
profile is symmetric) from every node of ``S(i-1)``, then each constraint on node ``i`` keeps the nodes that hold
its fact. A program stands (``stands``) only when every set is exactly one node: uniqueness is by execution,
never by assumption.

**Pins** (``pin_node``). Where a step reaches several nodes (or its label names one of many in the world, by its
profile's count, even when the graph shows one), the fewest facts of the node meant that leave it alone among the
step's set are added as constraints (one, else two). A fact may pin only when

- its value is none of the chain's nodes (it would name them) and its label can be said as a relative clause;
- it does not single out the node by itself: at least two nodes hold it (else the question is a one-hop lookup
  from the value, and the chain before it says nothing);
- its value is no nearer the answer than the node it pins (no constraint reaches the answer more directly than
  the chain: the same rule as the path's shortcut check).

Refused otherwise, with the reason (``PinRefusal``).

**Sampling** (``sample_programs``). Random walks from the seed over its whole neighbourhood (no rendered context
to stay inside), each hop one BFS layer further out (shortcut-free by construction), weighted towards relations
the seed's walks have not used yet and away from hubs (``1 / sqrt(1 + degree)``), as DeepDive's walks are. Each
walk becomes a program; programs that do not stand, or whose hops cannot be pinned, are refused with a reason.

**SPARQL** (``program_sparql``, ``rdf_lines``). The RDF form of a snapshot has one IRI per entity and per relation
key (``entity_iri``, ``relation_iri``), one triple per relation in the direction its profile reads (subject first),
and an ``rdfs:label`` per entity. A program's query selects the answer variable; on that form it returns exactly
the program's answer set.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

from schemas.answers import lenient_key
from schemas.meaning import RelationProfile, relation_key
from schemas.programs import ProgramConstraint, ProgramStep, QueryProgram
from schemas.qa import PathEdge
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.morphology import derived_noun, label_words, ranks_between
from tasks.meaning.names import (CATCH_ALL_WORDS, NAME_PARTICLES, NAME_RELATIONS, PLACE_KINDS, TYPE_RELATIONS, YEAR,
                                 bare_number, column_value, coordinates, display_name, english_word, heading_not_name,
                                 is_identifier, kind_head, node_type_noun, other_script, question_name,
                                 registry_capitals, registry_place_name, relation_word, strip_disambiguator,
                                 symbol_kind, type_text_noun)
from tasks.meaning.profiles import ProfileBook, book_for_graph, edge_label
from tasks.qa.context import edge_as_hop, hop_edge
from tasks.qa.template_writer import INSIDE_STATEMENT

#: Facts of one node looked at when pinning it (its relations, in name order); a hub's first ones only.
MAX_PIN_FACTS = 400
#: Facts kept for the pair search: those that narrow the set most.
MAX_PAIR_FACTS = 40
#: Whether a fact over a profile (the pinned node its subject when the flag is true) can be said as a pin.
ClauseOk = Callable[[RelationProfile, bool], bool]


# -- the relation index -------------------------------------------------------------------------------------------


class KindTables(NamedTuple):
    """Per type noun (the question's noun for a node, ``RelationIndex.kind``), what its names show:"""

    #: whether at least half of its nodes have a code's shape (a kind of one or two nodes says nothing against it);
    codes: dict[str, bool]
    #: whether the graph keys its nodes by identifiers, not names: of three nodes or more, at least half are one
    #: lower-case token with a digit, an underscore or a hyphen ("zen2", "cortex_a72", "x86_64", "food-vegetable"),
    #: whose other lower-case tokens ("haswell", "excavator") are keys of the same table, not names written in lower
    #: case; or the kind is an abbreviation table: at least half its names short codes and some mixing cases or
    #: carrying a digit ("CVn", "UMa", "CL6"), or nearly all short codes ("BUF", "SLB": a database's team codes); not
    #: a kind of people called "Ada" and "Bob", nor organizations some of which go by acronyms ("IBM", "UCLA");
    ids: dict[str, bool]
    #: whether nearly all its names are written with capitals (``RelationIndex._lower_among_capitals``);
    capitalised: dict[str, bool]
    #: whether, of five nodes or more, at least half are one token of words run together (``_run_together``): a
    #: schema's classes and enumerations ("OntologyClass", "AnalysisTypeEnum"), a standard's entities
    #: ("IfcActuatorType"), an API's types ("VkSurfaceFormatKHR"), identifiers no reader says, not a kind of things
    #: with names ("Biosample" beside them, "Organism Sample");
    run_together: dict[str, bool]
    #: the same per type column (a schema's "is_a" names a class's kind after its parent, its row says "class");
    run_together_types: dict[str, bool]
    #: whether, of five nodes or more, at least half are identifiers joined by underscores (``snake_identifier``), so
    #: that its every name joined so is one ("Pset_Address" among "Pset_KerbCommon").
    snake: dict[str, bool]


def _run_together(bare: str) -> bool:
    """Whether a name is one token of words run together (``_CAMEL``, ``_RUN_TOGETHER``)."""
    return bool(_CAMEL.fullmatch(bare) or _RUN_TOGETHER.fullmatch(bare))


@dataclass
class RelationIndex:
    """Every relation of a snapshot under its profile key, both ways: ``out[key][subject]`` is the objects,
    ``into[key][object]`` the subjects; ``labels[key]`` one raw spelling of the label."""

    out: dict[str, dict[str, set[str]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(set)))
    into: dict[str, dict[str, set[str]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(set)))
    labels: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str | None] = field(default_factory=dict)
    kg: KnowledgeGraph | None = None
    codes: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)  # ``is_code`` per name, once

    def kind(self, name: str) -> str | None:
        """The type noun the graph gives ``name`` ("city"; ``node_type_noun``), None when it gives none."""
        if name not in self.kinds:
            noun = node_type_noun(self.kg, name) if self.kg is not None and name in self.kg else "entity"
            self.kinds[name] = None if noun == "entity" else noun
        return self.kinds[name]

    def is_code(self, name: str) -> bool:
        """``_is_code``, worked out once per name (the index is made over one snapshot and not changed after)."""
        hit = self.codes.get(name)
        if hit is None:
            hit = self.codes[name] = self._is_code(name)
        return hit

    def _is_code(self, name: str) -> bool:
        """Whether a question may not show ``name`` as a name (``code_like``, judged with its kind): an identifier
        always; a code-shaped name ("PDP-11", "IR8", "TCP/IP" have the shape of "ES-MD" and "Asia/Dubai") only where
        the graph gives it no kind (or a kind of one or two nodes), or where most names of its kind have that shape
        too (time zones, ISO codes): a product called "PDP-11" among machines called "ENIAC" and "Colossus" is a
        name. A code in brackets after a name ("Flintshire [Sir y Fflint GB-FFL]") is never written so."""
        shown = display_name(name).strip()
        if not any(ch.isalnum() for ch in shown):
            return True  # ",", "-", "?": an empty cell's placeholder, no name at all
        if other_script(shown):
            return True  # "音羽山", "অভয়নগর": no Latin letter, no name an English question can show as written
        if re.search(r"\w\^|[{}]", shown):
            return True  # a translation tag or a template's markup left in the name ("female^Elvish Shyde")
        if _PLACEHOLDER_SLOT.search(shown):
            return True  # "<TransferState>", "Status (WriterGroupType/<DataSetWriterName>)": a template's slot
        if _PADDED_ID.fullmatch(shown):
            return True  # "C0026", "G0132", "S0154": a catalogue's number, padded with zeros, names nothing
        digits = shown.removeprefix("0x")
        if _HEX.fullmatch(shown) and re.search(r"\d", digits) and re.search(r"[a-fA-F]", digits):
            return True  # "504b0304", "0x1F8B": bytes in hexadecimal, a file's magic number or a checksum
        if _HEX_COLOUR.fullmatch(shown):
            return True  # "#a45a2a": a colour's code for a screen, which no reader answers with (nor names "brown")
        if _PLACEHOLDER.fullmatch(strip_disambiguator(name).strip()):
            return True  # "hypothetical protein", "orf", "unknown": a file's word for what it does not know, no name
        if self._lower_among_capitals(name):
            return True  # "voxbone", "do what cha wanna" among names written with capitals: the file's lower case
        if self._registry_capitals(name):
            return True  # "SOCIO CUE" among "CERRO PYTA", "SAN JUAN NEUMANN": a registry's capitals, no name as written
        if _KEBAB.fullmatch(strip_disambiguator(name).strip()):
            return True  # "crafting-with-fluid", "kovarex-enrichment-process": a program's key, words joined by "-"
        if "_" in name and _SHOUTED_KEY.fullmatch(name):
            return True  # "BATTLE_OF_THE_BANDS", "THE_SUNKEN_CITY": a program's constant, not a name
        if _COORDINATES.fullmatch(shown):
            return True  # "X-154532082-G-A": a variant's chromosome, position and alleles, a key with no build named
        if _ACCESSION.fullmatch(shown):
            return True  # "CL:0002587", "GO:0008150": an ontology's accession, a prefix and a number
        if _locus_tag(shown):
            return True  # "GLYMA-15G018400", "PK21687.1", "F52B5.7": a genome's locus tag or a versioned accession
        if _ID_TYPE.fullmatch(self.type_of(name)):
            return True  # a node the graph types "Id", "code", "identifier": the file says it is a code, no name
        if self.kg is not None and name in self.kg and _record_tag(question_name(self.kg, name)):
            return True  # "baby blue dragon (2)", "Feral Vampyre (Level 61) (3239)": told apart by a record number
        if self.kg is not None and name in self.kg and self._coded_tag(name, question_name(self.kg, name)):
            return True  # "Z (3DVectorType)", "Open (ServerType/ServerCapabilities)": told apart by identifiers
        if is_identifier(shown) or _BRACKETED_CODE.search(shown) or snake_identifier(name):
            return True
        tables = self._kind_tables()
        if "_" in name and not any(ch.isspace() for ch in name) and tables.snake.get(self.kind(name) or "", False):
            return True  # "Pset_Address" among "Pset_KerbCommon", "Pset_WallCommon": the kind's names are identifiers
        bare = strip_disambiguator(name).strip()
        keyed = _KEY.fullmatch(bare) or _DIGIT_KEY.fullmatch(bare) or _short_code(name) or _SHOUTED_KEY.fullmatch(name)
        if keyed and tables.ids.get(self.kind(name) or "", False):
            # "haswell" among "zen2", "cortex_a72", "x86_64"; "Aql" among "CVn", "UMa", "Com": the graph keys this
            # kind by identifiers or by three-letter abbreviations
            return True
        if _run_together(bare) and (tables.run_together.get(self.kind(name) or "", False)
                                    or tables.run_together_types.get(self.type_of(name), False)):
            return True  # "OntologyClass" among a schema's classes named so: an identifier, words run together
        record = _RECORD.match(shown)
        if record is not None and (self.kind(name) or "").split()[-1:] == [record[1].lower()]:
            return True  # "capture 21778", a capture: a table's record number, not a name
        notation = _notation(shown)
        if notation and self.kg is not None and column_value(self.kg, name):
            return True  # "uud", "bB": a column's value of a few letters no word list knows is a notation
        if not (code_like(name) or notation):
            return False
        kind = self.kind(name)
        return kind is None or tables.codes.get(kind, True)

    def _coded_tag(self, name: str, shown: str) -> bool:
        """Whether the bracketed tag a question shows after ``name`` is made of identifiers: a path ("A/B/C") one
        of whose parts is an identifier or ten letters or more run together with three capitals ("Open
        (CertificateGroupFolderType/TrustList)"; not "Mobile Broadband (VivaCell/MTS)", "(EMBL/GenBank/DDBJ)"), or
        words run together naming another node of the graph that a question may not show ("Z (3DVectorType)", an
        object type keyed so). A tag naming a place, a state, a kind or a year ("Mae Tha (Lampang)", "Marshall
        (TX)", "Sop Pat (abolished subdistrict)") is a name's and stays."""
        m = _TRAILING_TAG.search(shown)
        if m is None:
            return False
        parts = [p.strip() for p in m[1].split("/")]
        if len(parts) > 1 and any(_RUN_TOGETHER.fullmatch(p) or is_identifier(p) for p in parts):
            return True
        return any(_run_together(p) and p != name and self.kg is not None and p in self.kg and self.is_code(p)
                   for p in parts)

    def _lower_among_capitals(self, name: str) -> bool:
        """Whether ``name`` has letters and no capital where nine in ten of its kind's names (ten or more) have one and
        three in four begin with one: a brand or a title the file wrote in lower case ("voxbone", "do what cha
        wanna"), not as it is named. A kind of descriptions that begin in lower case and name someone further on
        ("love-affairs of Galatea") is no kind of capitalised names: its "origin of man" is written as its names
        are."""
        bare = strip_disambiguator(name).strip()
        if not any(ch.isalpha() for ch in bare) or any(ch.isupper() for ch in bare) or self.kg is None:
            return False
        return self._kind_tables().capitalised.get(self.kind(name) or "", False)

    def _registry_capitals(self, name: str) -> bool:
        """Whether ``name`` is a registry's capitals (``registry_capitals``: "SOCIO CUE" among "SAN JUAN NEUMANN",
        "CERRO PYTA", "KAR4" among gene symbols) that the question cannot write as a place's name
        (``registry_place_name``: "Socio Cue", a city, is written so; a code or a word that may be an acronym is
        not)."""
        if self.kg is None or name not in self.kg or not registry_capitals(self.kg, name):
            return False
        return registry_place_name(self.kg, name) is None

    def _kind_tables(self) -> KindTables:
        """``KindTables`` of the graph's nodes, counted in one pass and kept."""
        if self.kg is None:
            return KindTables({}, {}, {}, {}, {}, {})
        hit = self.__dict__.get("_kind_tables_hit")
        if hit is None:
            counts: dict[str, list[int]] = defaultdict(lambda: [0] * 12)
            typed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            snake: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for node in self.kg.nodes():
                kind = self.kind(node) or ""  # the nodes the graph gives no kind are counted as one table too
                bare = strip_disambiguator(node).strip()
                short = _short_code(node)
                c = counts[kind]
                c[0] += 1
                c[1] += code_like(node) or _notation(bare)
                c[2] += bool(_KEY.fullmatch(bare) and re.search(r"[\d_-]", bare))
                c[3] += short
                c[4] += short and (any(ch.isdigit() for ch in bare) or
                                   (bare[1:] != bare[1:].upper() and bare[1:] != bare[1:].lower()))
                lower = bool(_KEY.fullmatch(bare))
                c[5] += lower
                c[6] += lower and not all(english_word(w) for w in re.split(r"[\d._-]+", bare) if w)
                c[7] += bool(_SHOUTED_KEY.fullmatch(node))
                c[8] += bool(_SHOUTED_KEY.fullmatch(node) and re.search(r"[\d_]", node))
                c[9] += any(ch.isupper() for ch in bare)
                c[10] += next((ch.isupper() for ch in bare if ch.isalpha()), False)
                run = _run_together(bare)
                c[11] += run
                snake[kind][0] += 1
                snake[kind][1] += snake_identifier(node)
                declared = self.type_of(node)
                if declared:  # the type column's tables too: a schema's is_a names a class's kind after its parent
                    t = typed[declared]
                    t[0] += 1
                    t[1] += run
            codes = {k: n < 3 or 2 * coded >= n for k, (n, coded, *_) in counts.items()}
            # nine in ten with a capital, three in four beginning with one: names, not descriptions that begin in
            # lower case and name someone further on ("love-affairs of Galatea"), nor gene symbols ("aadA")
            capitalised = {k: v[0] >= 10 and 10 * v[9] >= 9 * v[0] and 4 * v[10] >= 3 * v[0]
                           for k, v in counts.items()}
            # keys: half the names one lower-case token with a digit, "_" or "-"; half short codes, some mixed in
            # case or with a digit; nearly all short codes; of ten or more, four in five one lower-case token and two
            # in three of those no English word ("bcycle", "bicincitta", "ecovelo": a library's module names, which
            # the owners write "BCycle", "Bicincittà"), or of five or more, every one such a token, one with a
            # digit and half no English word ("escp2", "dyesub", "pcl", "canon": a driver's family keys); or half
            # keys in capitals, two of them with a digit or "_" ("ULDUM" beside "EXPERT1" and "BATTLE_OF_THE_BANDS":
            # a program's constants, not an agency's acronyms)
            ids = {k: n >= 3 and not symbol_kind(k) and (
                       2 * keys >= n or (2 * short >= n and mixed >= 2) or (n >= 5 and 10 * short >= 9 * n)
                       or (n >= 10 and 5 * lower >= 4 * n and 3 * foreign >= 2 * lower)
                       or (n >= 5 and lower == n and keys >= 1 and 2 * foreign >= lower)
                       or (2 * shouted >= n and constants >= 2))
                   for k, (n, _, keys, short, mixed, lower, foreign, shouted, constants, *_) in counts.items()}
            def half(table: dict[str, list[int]]) -> dict[str, bool]:
                return {k: n >= 5 and 2 * hits >= n for k, (n, hits) in table.items()}

            hit = self.__dict__["_kind_tables_hit"] = KindTables(
                codes, ids, capitalised, half({k: [v[0], v[11]] for k, v in counts.items()}), half(typed), half(snake))
        return hit

    def add(self, subject: str, label: str, obj: str) -> None:
        key = relation_key(label)
        self.labels.setdefault(key, label)
        self.out[key][subject].add(obj)
        self.into[key][obj].add(subject)
        self.__dict__.pop("_wide_memo", None)  # what the wider readings reached no longer holds
        self.__dict__.pop("_family_keys", None)

    def reach(self, node: str, label: str, forward: bool, symmetric: bool = False, direct: bool = False) -> set[str]:
        """The nodes one step over ``label`` leads to from ``node``; over a transitive label (``transitive_label``:
        "subclass of", "part of") also every node further along the same label that has the kind of a node one step
        away, as the world reads it: what "asthma" is a subclass of includes its class's own superclass. A
        containment label (``_CONTAINMENT``) goes on over the others as well: a country located in Southern Asia,
        which is part of Asia, is located in Asia. ``direct``: the graph's own facts alone, no wider reading."""
        key = relation_key(label)
        found = self._step(key, node, forward, symmetric)
        if direct or symmetric:
            return found
        for sub in self._sub_keys(key):  # a node's hidden ability is one of its abilities
            found |= self._step(sub, node, forward, False)
        if not found:
            return found
        transitive = transitive_label(label)
        if not transitive and not self._taxonomy_keys():
            return found
        memo = self.__dict__.setdefault("_wide_memo", {})
        hit = memo.get((key, node, forward))
        if hit is None:  # kept: a pin over "located in <continent>" is asked of every candidate
            wide = self._wide(key, node, forward, found) if transitive else self._inherited(key, node, forward, found)
            hit = memo[(key, node, forward)] = frozenset(wide)
        return set(hit)

    def _sub_keys(self, key: str) -> tuple[str, ...]:
        """The keys of the graph's labels that narrow label ``key`` by words before it ("hiddenAbility" and
        "ability", "official language" and "language", "home_team" and "team"): each fact of one is a fact of
        ``key`` in the world, so "an ability of Minccino" includes its hidden ability. A modifier that puts the
        fact in the past or the future ("former capital", "next stop"), or makes it a wish ("proposed name"),
        does not narrow it."""
        table = self.__dict__.setdefault("_sub_key_table", {})
        if key not in table:
            head = [w.lower() for w in label_words(self.labels.get(key, key))]
            found = []
            for other, raw in self.labels.items():
                words = [w.lower() for w in label_words(raw)]
                if other != key and head and len(words) > len(head) and words[-len(head):] == head and \
                        not set(words[:-len(head)]) & _NOT_NARROWING and all(w.isalpha() for w in words):
                    found.append(other)
            table[key] = tuple(sorted(found))
        return table[key]

    def _taxonomy_keys(self) -> tuple[str, ...]:
        """The keys of the graph's subclass labels ("subClassOf", "subclass of")."""
        return self._keys_of(_TAXONOMY)

    def _inherited(self, key: str, node: str, forward: bool, found: set[str]) -> set[str]:
        """``reach`` over a label a class hands down to its subclasses, as an ontology reads it (EDAM's operation
        "has topic" T: so has every subclass of it): forward, also what the node's superclasses have; backward, also
        the subclasses of every holder; of the kinds of the nodes one step away."""
        tax = self._taxonomy_keys()
        if key in tax:
            return found
        kinds = {self.kind(x) for x in found}
        if forward:
            table = self.out.get(key, {})
            seen = {x for sup in self._walk(tax, {node}, True) for x in table.get(sup, ())}
        else:
            seen = self._walk(tax, found, False)
        seen.discard(node)
        # of those kinds as the question's noun reads them: a subclass a schema's "is_a" names after its parent
        # ("planned process") is still of the type its row gives ("class")
        return found | {x for x in seen if self.kind(x) in kinds or any(self.fits(x, k) for k in kinds if k)}

    def _wide(self, key: str, node: str, forward: bool, found: set[str]) -> set[str]:
        """``reach`` over a transitive label, wider than the one step ``found``."""
        kinds = {self.kind(x) for x in found}
        keys = self._containment_keys() if _squashed(self.labels[key]) in _CONTAINMENT else (key,)
        # the label, then the family any number of times: forward from what the label reaches; backward, the
        # label's holders of the node and of every part of it
        if forward:
            seen = set(found) | self._walk(keys, found, True)
        else:
            holders = self.into.get(key, {})
            seen = {x for end in (*self._walk(keys, {node}, False), node) for x in holders.get(end, ())}
        seen.discard(node)
        return found | {x for x in seen if self.kind(x) in kinds}

    def _walk(self, keys: Sequence[str], start: set[str], forward: bool) -> set[str]:
        """Every node reached from ``start`` by one or more steps over ``keys``."""
        tables = [(self.out if forward else self.into).get(k, {}) for k in keys]
        seen: set[str] = set()
        todo = list(start)
        while todo:
            here = todo.pop()
            for table in tables:
                for nxt in table.get(here, ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
        return seen

    def _containment_keys(self) -> tuple[str, ...]:
        """The keys of the graph's containment labels (``_CONTAINMENT``): what lies in a part lies in the whole,
        whichever of them says so ("Iran located in Southern Asia", "Southern Asia part of Asia")."""
        return self._keys_of(_CONTAINMENT)

    def _keys_of(self, family: frozenset[str]) -> tuple[str, ...]:
        """The keys of the graph's labels whose words run together are in ``family``, kept per family (forgotten
        when a fact is added)."""
        kept = self.__dict__.setdefault("_family_keys", {})
        hit = kept.get(family)
        if hit is None:
            hit = kept[family] = tuple(sorted(k for k, label in self.labels.items() if _squashed(label) in family))
        return hit

    def _step(self, key: str, node: str, forward: bool, symmetric: bool) -> set[str]:
        found = set(self.out.get(key, {}).get(node, ())) if (forward or symmetric) else set()
        if not forward or symmetric:
            found |= self.into.get(key, {}).get(node, set())
        return found

    def holders(self, label: str, forward: bool, value: str, symmetric: bool = False, direct: bool = False) -> set[str]:
        """The nodes holding the fact: subject of ``(x, label, value)`` when ``forward``, else object of
        ``(value, label, x)``."""
        return self.reach(value, label, not forward, symmetric, direct)

    def share(self, label: str, forward: bool, kind: str | None, value: str) -> tuple[int, int]:
        """Of the nodes of ``kind`` that the graph gives a value of ``label`` (as subject when ``forward``), how many
        have ``value`` among theirs, and how many there are."""
        key = (relation_key(label), forward, kind)
        table = self.__dict__.setdefault("_shares", {})
        if key not in table:  # per label, direction and kind: how many of the kind's nodes have each value, of how many
            values = (self.out if forward else self.into).get(key[0], {})
            holders = [x for x in values if self.kind(x) == kind]
            table[key] = (Counter(v for x in holders for v in values[x]), len(holders))
        counts, of = table[key]
        return counts.get(value, 0), of

    def placeholder_date(self, name: str) -> str | None:
        """Why the date ``name`` may stand in for a coarser one, or None. A file that knows only the year of some
        things writes 1 January (only the month: the 1st), and a day then says what nobody knows ("released on 1
        January 2020"). Read from the graph's own full dates: where at least ``PLACEHOLDER_MIN`` of them fall on 1
        January and that is ``PLACEHOLDER_EXCESS`` times what days spread over the year give, every 1 January date is
        taken for a year; likewise the 1st of a month for a month."""
        m = _ISO_DAY.fullmatch(name.strip())
        if m is None or m[3] != "01":
            return None
        new_year, first, total = self._date_days()
        if m[2] == "01" and new_year >= PLACEHOLDER_MIN and new_year > PLACEHOLDER_EXCESS * total / 365:
            return (f"{name!r} is 1 January, as {new_year} of the graph's {total} dates are (about "
                    f"{total / 365:.1f} would be by chance): the file's stand-in for a year, not a day")
        if first >= PLACEHOLDER_MIN and first > PLACEHOLDER_EXCESS * total * 11 / 365:
            return (f"{name!r} is the 1st of a month, as {first} of the graph's {total} dates are (about "
                    f"{total * 11 / 365:.1f} would be by chance): the file's stand-in for a month, not a day")
        return None

    def _date_days(self) -> tuple[int, int, int]:
        """Of the graph's full ISO dates (nodes named YYYY-MM-DD): how many are 1 January, how many the 1st of
        another month, and how many there are."""
        hit = self.__dict__.get("_date_days_hit")
        if hit is None:
            days = [m for m in (_ISO_DAY.fullmatch(n) for n in (self.kg.nodes() if self.kg is not None else ())) if m]
            hit = self.__dict__["_date_days_hit"] = (
                sum(m[2] == "01" and m[3] == "01" for m in days), sum(m[2] != "01" and m[3] == "01" for m in days),
                len(days))
        return hit

    def type_of(self, name: str) -> str:
        """The type the graph's own type column gives ``name`` (empty where it gives none or an unknown one)."""
        if self.kg is None or name not in self.kg:
            return ""
        t = (self.kg.entity(name).type or "").strip()
        return "" if t.upper() in ("UNKNOWN", "") else t

    def twin_of(self, name: str) -> str | None:
        """Another node whose name differs from ``name`` only in case, accents or punctuation ("Atras Da Porta" and
        "Atrás da Porta", "telia" and "Telia", "Janssen Products LP" and "Janssen Products, LP"), or, among the nodes
        of its kind, by that kind's word ("Quartier Rugarama" and "Rugarama", two quartiers), or None: a reader
        cannot tell which of the two a question that shows the name means."""
        tables = self.__dict__.get("_twins")
        if tables is None:
            # by shown name; by kind and core, every node; by kind and core, the untagged ones that say the kind
            tables = self.__dict__["_twins"] = (defaultdict(list), defaultdict(list), defaultdict(list))
            shown, cores, designated = tables
            for n in (self.kg.nodes() if self.kg is not None else ()):
                shown[_twin_key(n)].append(n)
                read = kind_name(n, self.type_of(n))
                if read is not None:
                    cores[read.core].append(n)
                    if read.designated and not read.tagged:
                        designated[read.core].append(n)
        shown, cores, designated = tables
        found = next((n for n in shown.get(_twin_key(name), ()) if n != name), None)
        read = kind_name(name, self.type_of(name)) if found is None else None
        if read is None or read.tagged:  # a tag tells it apart ("Kavumu (Butarugera)", "Kent County (DE)")
            return found
        # a name that says its kind's word fits every node of that kind and name, tagged or not ("Quartier Kavumu",
        # "Kavumu (Butarugera)"); a name without one fits one that says it, untagged ("Rugarama")
        return next((n for n in (cores if read.designated else designated).get(read.core, ()) if n != name), None)

    def fits(self, name: str, kind: str) -> bool:
        """Whether a question's noun ``kind`` fits node ``name``: its kind is that noun, or its type column says it
        (a gene whose class in the ontology names its kind "blaS" is still a "resistance gene", as the graph types
        it, and "which resistance gene ..." reaches it)."""
        if self.kind(name) == kind:
            return True
        declared = self.type_of(name)
        return bool(declared) and type_text_noun(declared) == kind

    def kind_is_a(self, name: str, typed: str) -> bool:
        """Whether the node ``name``'s kind is named after is itself of the type ``typed`` (a subkind inside one type:
        "subsets" is a "node property", and the node "node property" is of the type "slots")."""
        kind = self.kind(name)
        found = self.kg.lookup(kind) if self.kg is not None and kind else None
        return found is not None and self.type_of(found) == typed

    def one_to_one(self, key: str) -> bool:
        """Whether the relation keyed ``key`` ties each of its subjects to one object and each object to one subject,
        over at least ``PARTITION_MIN`` facts: a name's own code, symbol or abbreviation, read off either end."""
        table = self.__dict__.setdefault("_one_to_one", {})
        if key not in table:
            out, into = self.out.get(key, {}), self.into.get(key, {})
            table[key] = len(out) >= PARTITION_MIN and all(len(v) == 1 for v in out.values()) and \
                all(len(v) == 1 for v in into.values())
        return table[key]

    def one_container(self, label: str, forward: bool, kind: str | None) -> bool:
        """Whether the graph's ``kind`` nodes divide what ``label`` puts inside them (read ``forward`` from the
        node inside): every node inside one is inside exactly one, over at least ``PARTITION_MIN`` nodes, as one
        level of a territorial hierarchy divides the level below (each commune in one province)."""
        if kind is None:
            return False
        key = (relation_key(label), forward, kind)
        table = self.__dict__.setdefault("_containers", {})
        if key not in table:  # things that stretch across borders (a river in two provinces) are not counted
            counts = [n for n in (sum(self.kind(o) == kind for o in objs)
                                  for x, objs in (self.out if forward else self.into).get(key[0], {}).items()
                                  if (self.kind(x) or "").lower() not in _SPANNING) if n]
            table[key] = len(counts) >= PARTITION_MIN and max(counts) == 1
        return table[key]

    def has(self, node: str, label: str, forward: bool, symmetric: bool = False) -> bool:
        """Whether the graph states any fact of ``label`` for ``node`` in that role (subject when ``forward``)."""
        return any(node in table for table in self.stated(label, forward, symmetric))

    def unstated(self, label: str, forward: bool, kind: str) -> frozenset[str]:
        """The nodes of ``kind`` the graph states no fact of ``label`` for in that role (subject when ``forward``):
        under the local closed world a graph is read by (a node's recorded values of a relation are all it has, a
        node with none recorded may have any), each of them may hold any value of it."""
        memo = self.__dict__.setdefault("_unstated", {})
        key = (relation_key(label), forward, kind)
        if key not in memo:
            by_kind = self.__dict__.setdefault("_by_kind", {})
            if not by_kind and self.kg is not None:
                for node in self.kg.nodes():
                    by_kind.setdefault(self.kind(node), set()).add(node)
            memo[key] = frozenset(x for x in by_kind.get(kind, ()) if not self.has(x, label, forward))
        return memo[key]

    def attribute_of_kind(self, label: str, forward: bool, kind: str) -> bool:
        """Whether ``label`` (as subjects when ``forward``) is an attribute of the nodes of ``kind`` that they share:
        every node of the kind that has a value has one, and two of them share one ("the dialect's macroarea",
        "the language's status"). Such a relation is one every node of the kind has in the world, so a node with
        none recorded is unknown, not without it; one a node may hold many times or never ("a developer of a
        technology": a house develops none) is not, nor one that no two nodes share ("the country whose capital
        is Paris")."""
        memo = self.__dict__.setdefault("_attribute_of_kind", {})
        key = (relation_key(label), forward, kind)
        if key not in memo:
            values = (self.out if forward else self.into).get(key[0], {})
            seen: set[str] = set()
            shared = False
            for x, vals in values.items():
                if self.kind(x) != kind:
                    continue
                if len(vals) > 1:
                    memo[key] = False
                    break
                shared = shared or bool(seen & vals)
                seen |= vals
            else:
                # its values are classes the graph says nothing else of (a macroarea, a status), not things that
                # link on (a technology a technology follows: the first of a tree follows none)
                memo[key] = shared and not any(v in table for table in self.out.values() for v in seen)
        return memo[key]

    def stated(self, label: str, forward: bool, symmetric: bool = False) -> tuple[dict[str, set[str]], ...]:
        """The tables whose keys are the nodes the graph states a fact of ``label`` for in that role (``has``)."""
        key = relation_key(label)
        return tuple(table.get(key, {}) for table, used in ((self.out, forward or symmetric),
                                                            (self.into, not forward or symmetric)) if used)

    def listed_in(self, label: str, value: str) -> bool:
        """Whether another object of ``label`` is a list that holds ``value`` as an item ("fair, green, yellow"
        holds "green"): a question that says "whose skin colour is green" then fits those nodes too."""
        key = relation_key(label)
        table = self.__dict__.setdefault("_list_items", {})
        items = table.get(key)
        if items is None:
            items = set()
            for obj in self.into.get(key, {}):
                parts = [p.strip().casefold() for p in _LIST_SPLIT.split(obj)]
                if len(parts) > 1:
                    items.update(p for p in parts if p)
            table[key] = items
        return value.strip().casefold() in items

    def triples(self) -> Iterator[tuple[str, str, str]]:
        """``(subject, key, object)`` for every indexed fact, sorted."""
        for key in sorted(self.out):
            for s in sorted(self.out[key]):
                for o in sorted(self.out[key][s]):
                    yield s, key, o


#: An answer that this share of the nodes of the last step's kind have (of at least ``PREDICTABLE_MIN`` such nodes) is
#: guessed without reading the question: the phoneme class of a stressed vowel, the department every school abroad
#: is filed under, the one category a calendar gives every feast.
PREDICTABLE_SHARE = 0.8
PREDICTABLE_MIN = 5

#: A cell that lists values ("white, blue"): as a pin's value its comma would break the clauses joined around it.
_CELL_LIST = re.compile(r"[,;]\s")
#: How a table's cell lists several values ("fair, green, yellow", "red and blue").
_LIST_SPLIT = re.compile(r",\s*|\s+and\s+|\s*/\s*|\s*;\s*")


def relation_index(kg: KnowledgeGraph) -> RelationIndex:
    """The snapshot's ``RelationIndex``, built once per graph object (every relation read as its profile reads it:
    ``edge_label`` gives the text and the end it reads from; a labelled relation imported as undirected both
    ways)."""
    hit = kg.__dict__.get("_relation_index")
    if hit is not None:
        return hit
    index = RelationIndex(kg=kg)
    for r in kg.sorted_views():
        text, subject = edge_label(r, r.source, r.target)
        if not text or r.source == r.target:
            continue
        obj = r.target if subject == r.source else r.source
        index.add(subject, text, obj)
        if not r.directed and r.relation.strip() and not r.source_chunk_ids:
            # A labelled fact imported as undirected ("A marriage_tie_with B", no text it was read from) holds both
            # ways: a question over it must find every node it reaches from either end. A relation LightRAG read
            # from text is stored undirected too, but its description says which way it reads.
            index.add(obj, text, subject)
    kg.__dict__["_relation_index"] = index
    return index


#: The memos a process fills lazily over one graph as it prepares and checks jobs, each a pure function of the
#: graph: the relation index's (``RelationIndex``: kinds, codes, twins, shares, wider readings, ...) and the names
#: module's on the graph object (``tasks.meaning.names``: column values, table types, description kinds, ...).
_INDEX_FIELDS = frozenset({"out", "into", "labels", "kg"})
_GRAPH_MEMOS = ("_column_values", "_table_types", "_description_kinds", "_rows_by_type", "_name_word_cases",
                "_type_edges_are_attributes", "_class_kinds", "_demonym_kinds", "_bare_name_counts", "_type_nouns")


def graph_memos(kg: KnowledgeGraph) -> dict[str, dict[str, object]]:
    """What this process has worked out about ``kg`` so far (``_GRAPH_MEMOS`` and the relation index's memos), to
    hand to another process that holds the same graph (``merge_graph_memos``): a forked process that prepared a
    domain's jobs sends them back, and the flow's process checks the answers and prepares the refill without
    working every table out again."""
    index = kg.__dict__.get("_relation_index")
    return {"index": {k: v for k, v in (index.__dict__ if index is not None else {}).items()
                      if k not in _INDEX_FIELDS},
            "graph": {k: kg.__dict__[k] for k in _GRAPH_MEMOS if k in kg.__dict__}}


def merge_graph_memos(kg: KnowledgeGraph, memos: dict[str, dict[str, object]]) -> None:
    """Add ``memos`` (``graph_memos`` of another process over the same graph) to this process's: an entry already
    here is kept (both are the same pure function of the graph), a memo missing here is taken whole. Safe while
    another thread reads or fills them: each step is one dict operation."""
    index = relation_index(kg)
    for target, got in ((index.__dict__, memos.get("index", {})), (kg.__dict__, memos.get("graph", {}))):
        for name, value in got.items():
            mine = target.setdefault(name, value)
            if mine is not value and isinstance(mine, dict) and isinstance(value, dict):
                for key, item in value.items():
                    mine.setdefault(key, item)


# -- execution -------------------------------------------------------------------------------------------------------


def execute(program: QueryProgram, index: RelationIndex, book: ProfileBook, direct: bool = False) -> list[set[str]]:
    """Each step's set after its constraints (module docstring), in step order; ``direct``: over the graph's own facts
    alone, without the wider readings (transitive labels, ``RelationIndex.reach``; a node's twin, ``twin_of``), as the
    program's SPARQL reads them."""
    frontier = {program.start}
    sets: list[set[str]] = []
    for i, step in enumerate(program.steps, start=1):
        sym = book.profile(step.label).symmetric
        reached: set[str] = set()
        # a node a reader cannot tell from another ("tropical" and "Tropical": a converter kept one value apart by
        # case) is the same thing in the world: the step goes on from both
        went = frontier if direct else frontier | {t for t in map(index.twin_of, frontier) if t is not None}
        for u in went:
            reached |= index.reach(u, step.label, step.forward, sym, direct)
        if step.kind is not None:
            reached = {x for x in reached if index.fits(x, step.kind)}
        for c in program.constraints_on(i):
            csym = book.profile(c.label).symmetric
            reached &= index.holders(c.label, c.forward, c.value, csym, direct)
        sets.append(reached)
        frontier = reached
    return sets


def stands(program: QueryProgram, index: RelationIndex, book: ProfileBook) -> str | None:
    """None when every step's set is exactly one node and they are the program's ``nodes``; else why not."""
    sets = execute(program, index, book)
    for i, found in enumerate(sets, start=1):
        want = program.nodes[i] if program.nodes else None
        if len(found) != 1:
            shown = ", ".join(repr(n) for n in sorted(found)[:3]) + (f" and {len(found) - 3} more" if len(found) > 3
                                                                       else "")
            return (f"step {i} ({program.steps[i - 1].label!r}) reaches {len(found)} nodes"
                    + (f": {shown}" if found else ""))
        if want is not None and found != {want}:
            return f"step {i} reaches {next(iter(found))!r}, not {want!r}"
    for i, (wide, own) in enumerate(zip(sets, execute(program, index, book, direct=True)), start=1):
        if own != wide:
            # the wider reading only tells whether another node could be meant; the answer stands on the facts
            return f"step {i} ({program.steps[i - 1].label!r}) holds only through a wider reading (a transitive label, or a twin's facts)"
    return None


# -- pins ------------------------------------------------------------------------------------------------------------

#: A name that is its kind and a number of four digits or more ("capture 21778", "record 10234"): a record number.
_RECORD = re.compile(r"^([A-Za-z]+) #?\d{4,}$")
_CODE = re.compile(r"^(?:[^\s/]+/[^\s]+|[A-Z]{2,3}-[A-Z0-9]{1,4}|[^\s]*_[^\s]*|[A-Z]{1,3}\d+[A-Z\d]*|"
                   r"[a-z]{1,3}\d{3,}[a-z\d]*|[a-z]{2}|[a-z][A-Z]|\d{1,2}[A-Z]{1,2}|[A-Z]{1,2}|"
                   r"[A-Z]{2,4} \d+(?: [A-Z]{2,4} \d+)+|(?=\S*[()])(?=\S*[+*=^])\S*[A-Za-z]\S*)$")


#: Relations that are transitive in the world, by their words run together ("subClassOf", "sub_class_of", "subclass
#: of"): whatever is a subclass of a subclass of Y is a subclass of Y.
_TRANSITIVE = frozenset({"subclassof", "subtypeof", "subsetof", "partof", "ispartof", "basedon", "derivedfrom",
                         "locatedin", "containedin", "includedin", "descendantof", "ancestorof", "isa",
                         "locatedintheadministrativeterritorialentity", "subpropertyof", "broader", "narrower",
                         "specialisationof", "specializationof", "generalisationof", "generalizationof",
                         # what follows from a thing follows from what implies it: A implies B implies C, A requires
                         # what B requires
                         "implies", "impliedby", "entails", "requires", "requiredby", "dependson",
                         "dependencyof"})


#: Modifiers of a label that do not narrow the label after them: "former capital" is no capital, "next station" no
#: station of the line's, "proposed name" no name (``RelationIndex._sub_keys``).
_NOT_NARROWING = frozenset({"former", "previous", "past", "old", "ex", "earlier", "prior", "late", "next", "future",
                            "planned", "proposed", "candidate", "nominated", "nominee", "rejected", "disputed",
                            "alleged", "unofficial", "not", "non", "no", "without", "pseudo", "fake", "false",
                            "number", "count", "total"})


#: Labels that make one class a subclass of another, whose other relations the subclass inherits: an ontology's or a
#: schema's "is_a" (OBO, LinkML, UMLS's "isa") is its subclass relation, so a class has the slots of its parent.
_TAXONOMY = frozenset({"subclassof", "subtypeof", "isa"})
#: Labels that say one place or thing lies within another: each composes with the others, so a country located in a
#: sub-region that is part of a continent is located in the continent too.
_CONTAINMENT = frozenset({"locatedin", "containedin", "partof", "ispartof",
                          "locatedintheadministrativeterritorialentity"})


def _squashed(label: str) -> str:
    """A label's words run together in lower case ("subClassOf", "sub_class_of", "subclass of": "subclassof")."""
    return re.sub(r"[\W_]+", "", relation_word(label).lower())


@functools.lru_cache(maxsize=8192)
def transitive_label(label: str) -> bool:
    """Whether a relation label names a transitive relation in the world (``_TRANSITIVE``), or a hierarchy by a noun
    made with "sub" ("music subgenre", "subregion", "subcategory": a subgenre of a subgenre of rock is one of rock)."""
    if _squashed(label) in _TRANSITIVE:
        return True
    if (label_words(label) or [""])[0] in ("required", "prerequisite", "prerequisites"):
        return True  # what a prerequisite requires is required too ("requiredResearch", "prerequisite courses")
    # a noun English derives with "sub" that the word list lacks ("subgenre", "subregion"; not "substance")
    return any(w.startswith("sub") and derived_noun(w) for w in (x.lower() for x in label_words(label)))


#: A three-letter token ("Aql", "CVn", "USD", "JFK") or a short code in capitals and digits ("CL6", "SL5", a UN/LOCODE
#: "NOOSL"): where most nodes of a kind are one, an abbreviation table.
_SHORT_CODE = re.compile(r"[A-Za-z]{3}|[A-Z][A-Z\d]{1,4}")


def _short_code(node: str) -> bool:
    """Whether ``node``, without a disambiguator the writer added ("TEX (franchise)"), is a short code token."""
    return bool(_SHORT_CODE.fullmatch(strip_disambiguator(node).strip()))


#: Capitals and a number padded with a zero ("C0026", "S0154", "PR-00421"): a catalogue's identifier, whatever
#: the kind (a machine called "PDP-11" or "A320" pads nothing).
_PADDED_ID = re.compile(r"[A-Z]{1,4}-?0\d{2,}(?:\.\d+)?")


@functools.lru_cache(maxsize=65536)
def _twin_key(name: str) -> str:
    """``name`` as a reader takes it: the lenient answer key of its shown form (case, accents, punctuation, a leading
    article and number words aside; ``schemas.answers.lenient_key``), and its spaces ("Palan" and "Pa Lan", two
    subdistricts a reader cannot tell apart)."""
    return lenient_key(display_name(name)).replace(" ", "")


class KindName(NamedTuple):
    """A name read against its node's kind (``kind_name``): its ``core`` key, and whether the name says the kind's
    own word ("Quartier Rugarama") or bears another tag ("Kavumu (Butarugera)")."""

    core: str
    designated: bool
    tagged: bool


def kind_name(name: str, kind: str) -> KindName | None:
    """``name`` without the words of its own kind at its start or end and without its trailing tag, as a twin key
    (``_twin_key``) under the kind ("Quartier Rugarama", "Rugarama (quartier)" and "Rugarama": three quartiers of
    one name to a reader; "Kavumu (Butarugera)" is a Kavumu too); None where the node has no kind or its name is
    nothing else."""
    kind = kind.strip().lower()
    if not kind:
        return None
    bare = name.strip()
    tag = _TRAILING_TAG.search(bare)
    tagged = tag is not None and tag.group(1).strip().lower() != kind
    if tag is not None:
        bare = bare[:tag.start()].strip()
    words = bare.split()
    size = len(kind.split())
    designated = len(words) > size and kind in (" ".join(words[:size]).lower(), " ".join(words[-size:]).lower())
    if designated:
        words = words[size:] if " ".join(words[:size]).lower() == kind else words[:-size]
    if not words:
        return None
    return KindName(f"{kind}\x00{_twin_key(' '.join(words))}", designated, tagged)


#: The bracketed tag that ends a shown name ("Mae Tha (Lampang)"); group 1 is its text.
_TRAILING_TAG = re.compile(r"\(([^()]*)\)\s*$")
#: A template's slot in angle brackets, a capital first: a placeholder a model fills in, no name ("<TransferState>",
#: "<ClientName>"; HTML's "The <model> element" names an element).
_PLACEHOLDER_SLOT = re.compile(r"<[A-Z][\w.-]+>")
#: Bytes in hexadecimal, six digits or more ("504b0304", "44617461506c6b72", "0x1F8B08").
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{6,}")
#: What a file writes where it has no name: an unknown or a placeholder ("unknown", "n/a", "none", "other"), a
#: protein or gene of unknown function ("hypothetical protein", "uncharacterized protein", "orf": an open reading frame).
_PLACEHOLDER = re.compile(r"(?i)(?:(?:hypothetical|uncharacteri[sz]ed|unknown|unnamed|unidentified|predicted)\s+"
                          r"(?:protein|gene|gene product|product|orf)|none|n/?a|tbd|tba|orf|not available|not applicable|"
                          + "|".join(sorted(CATCH_ALL_WORDS)) + ")")
#: Three parts or more joined by hyphens, one a number of five digits or more, no space ("X-154532082-G-A",
#: "10-102832596-GGAG-G"): coordinates or a registry's number, not a name.
_COORDINATES = re.compile(r"(?=\S*(?<![^-])\d{5,}(?![^-]))[^\s-]+(?:-[^\s-]+){2,}")
#: A colour as a web page writes it: "#" and three or six hexadecimal digits ("#0019a8", "#fff").
_HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3}){1,2}")
#: Three words or more in lower case joined by hyphens: a program's key ("crafting-with-fluid"), as snake_case is.
_KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}")
#: A key in capitals: a program's constant or a registry's code ("EXPERT1", "ULDUM", "BATTLE_OF_THE_BANDS").
_SHOUTED_KEY = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*[A-Z0-9]")
#: A run of letters and digits with five digits or more ("15G018400", "PK21687", "KB4012212"): a record's key.
_LONG_KEY_RUN = re.compile(r"(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]*(?:\d[A-Za-z]*){5,}")
#: Letters and three digits or more in one run, then a version after a dot, ending the name ("F52B5.7",
#: "NM_000546.6"; "HTML5.2", "Web2.0" are names).
_VERSIONED_KEY = re.compile(r".*(?=[A-Za-z_\d]*[A-Za-z])(?:[A-Za-z_]*\d){3}[A-Za-z_\d]*\.\d+")


def _locus_tag(shown: str) -> bool:
    """Whether a shown name is a genome's locus tag or a versioned accession: a run of letters and digits (split at
    hyphens, dots and spaces) with five digits or more, or letters and digits before a version number at its end. A
    model's number stays a name ("A350-1000", "SM-G991B", "Boeing 737-800": no run of both with five digits)."""
    if " " not in shown.strip() and _VERSIONED_KEY.fullmatch(shown.strip()):
        return True
    return any(_LONG_KEY_RUN.fullmatch(run) for run in re.split(r"[-.\s/_:]+", shown))


#: An ontology's accession: a prefix of letters and a number after a colon ("CL:0002587", "GO:0008150", "HP:0001250").
_ACCESSION = re.compile(r"[A-Za-z][A-Za-z_]{0,15}:\d{3,}")
#: Entity types that say their nodes are codes and nothing else: "Id", "ID", "identifier", "code". A type that names
#: its coding system ("postal code", "ICD-10-CM code", "hs_code") is left to the name's shape: such codes are how
#: people name the things ("E11.9", "B20").
_ID_TYPE = re.compile(r"(?i)id|ids|identifier|identifiers|code|codes|key|keys|uri|url|iri|uuid|accession")

def _record_tag(shown: str) -> bool:
    """Whether a shown name keeps a bracketed bare number that is no year ("baby blue dragon (2)", "X (3239)"), a
    bracketed code ("SM56 Modem (1092:4822)", "Geopotential Height (zg7h)") or a run of keys in capitals and digits
    ("Billing Provider Name (277 2000C 2100C)"): the table's record number or key telling two rows of one name apart,
    which no reader knows them by."""
    m = _TRAILING_TAG.search(shown)
    if m is None:
        return False
    tag = m[1].strip()
    if tag.isdigit() or _KIND_KEY_TAG.fullmatch(tag):
        return not YEAR.fullmatch(tag.split()[-1])
    tokens = tag.split()
    if len(tokens) >= 3 and all(re.fullmatch(r"[A-Z\d]+", t) for t in tokens) and \
            sum(any(ch.isdigit() for ch in t) for t in tokens) >= 2:
        return True  # "(837P 2000A 2300 SV5 4000)": a path of a standard's keys, the converter's, not the reader's
    return any(_TAG_CODE.fullmatch(t) and not re.fullmatch(r"\d+(?:st|nd|rd|th)", t) for t in re.split(r"[,;\s]+", tag))


#: A tag of a lower-case word and a key in capitals and digits ("(shabad P0Z)", "(entry 4KX)"), or of "code" / "id"
#: and a number ("(Memut, code 250314)"): the converter's record key after the row's kind, not a year ("(film 1999)").
_KIND_KEY_TAG = re.compile(r"(?:[^()]*,\s*)?(?:[a-z]+ [A-Z\d]{3,8}|(?:code|id|key|no\.?|number) \d+)")


#: A code in a name's bracketed tag: a pair of hexadecimal ids ("1092:4822", a PCI vendor and device) or lower-case
#: letters and digits run together ("zg7h", a variable's key); not a platform written with capitals ("PS4").
_TAG_CODE = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}|(?=[a-z\d]*\d)(?=[a-z\d]*[a-z])[a-z\d]{3,}")


#: A few letters in one token ("uud", "bB", "dss"): a notation where a column holds it and no word list knows it.
_NOTATION = re.compile(r"[A-Za-z]{2,3}")


def _notation(shown: str) -> bool:
    """Whether ``shown`` is a few letters that no word is written as: a mix of cases a name never has ("bB", "uD";
    not "Ada", "USD") or a lower-case token no word list knows ("uud", "dss")."""
    if not _NOTATION.fullmatch(shown) or shown.istitle() or shown.isupper():
        return False
    return not shown.islower() or not english_word(shown)

#: One token of lower-case letters, digits and ``._-`` (a table's key: "zen2", "armv8.3a", "cortex_a72", "haswell").
_KEY = re.compile(r"[a-z][a-z\d._-]*")
#: Such a token with digits first ("3anim2i", "0re", "2times"): a key where its kind is a table of keys.
_DIGIT_KEY = re.compile(r"\d+[a-z][a-z\d._-]*")
#: One token of two or more words run together, each after the first capitalised, a vendor's capitals after them
#: ("OntologyClass", "IfcActuatorType", "VkSurfaceFormatKHR", "vkCmdDrawIndirect"), perhaps after a number and its
#: capitals ("3DVectorType"): a schema's or a program's identifier where most names of its kind have the shape
#: (``KindTables.run_together``).
_CAMEL = re.compile(r"(?:\d+[A-Z]+(?=[A-Z][a-z]))?[A-Za-z][a-z]+\d*(?:[A-Z][a-z]+\d*)+(?:[A-Z]{2,}\d*)?")
#: One token of ten letters and digits or more, three of them capitals and some lower case ("VkVideoDecodeAV1Info",
#: "vkCreateIOSSurfaceMVK"): words run together with initials among them, counted as ``_CAMEL`` is.
_RUN_TOGETHER = re.compile(r"(?=[A-Za-z\d]{10,}$)(?=(?:[^A-Z]*[A-Z]){3})(?=[^a-z]*[a-z])[A-Za-z][A-Za-z\d]*")
#: Capitalised words of three letters or more run together ("KerbCommon"; not "McDonald"): in a name joined by
#: underscores, an identifier's part (``snake_identifier``).
_CAMEL_WORDS = re.compile(r"[A-Z][a-z]{2,}\d*(?:[A-Z][a-z]{2,}\d*)+")


def snake_identifier(name: str) -> bool:
    """Whether ``name`` as stored is an identifier joined by underscores, with a word a name would capitalise in lower
    case ("neoverse_v3ae", "x86_64", "US_force_ton", "meter_Hg_60F") or capitalised words run together
    ("Pset_KerbCommon", "PEnum_ElementStatus"): shown with spaces it is still no name ("cortex a72", "Pset
    KerbCommon"). Names whose words stand for spaces ("Albert_Einstein", "Battle_of_Hastings", "Apollo_11",
    "McDonald_House") are names."""
    t = name.strip()
    if "_" not in t or any(ch.isspace() for ch in t):
        return False
    core = re.sub(r"\([^)]*\)", "", t)
    return any(tok and not tok[:1].isupper() and not tok.isdigit() and tok.lower() not in NAME_PARTICLES
               or _CAMEL_WORDS.fullmatch(tok)  # "Pset_KerbCommon", "PEnum_ElementStatus"
               for tok in core.split("_"))



_BRACKETED_CODE = re.compile(r"[\[(][^\])]*\b[A-Z]{2,3}-[A-Z0-9]{1,4}\b[^\])]*[\])]")


_PATH = re.compile(r"[^\W\d_]/[^\W\d_]")


def code_like(name: str) -> bool:
    """Whether a name, as a question shows it (``display_name``: "Al_Pacino" is shown "Al Pacino"), is an
    identifier or a code rather than a name a person writes: a path-like id ("America/New_York", "Asia/Dubai"), an
    ISO-style code ("ES-MD"), an underscored token, a letter-digit code, a name that carries an ISO-style code in
    brackets ("Flintshire [Sir y Fflint GB-FFL]"), or what ``is_identifier`` says is one."""
    t = display_name(name).strip()
    if _CODE_SEQUENCE.fullmatch(t) and (re.search(r"\d", t) or len(t.split()) >= 4):
        return True  # a transcription or a code string: "HH AA0 R M AA1 N IH0 K S"
    if _CATALOGUE_KEY.fullmatch(t):
        return True  # a catalogue's key: "ESO270-017"
    if _DOTTED_PATH.fullmatch(name.strip()):
        return True  # a module's or a package's dotted path: "pygments.lexers.algebra"
    if _CODE_PAIR.fullmatch(t):
        return True  # two codes of one thing side by side: "ng NGA", "us USA" (a country's two ISO codes)
    return bool(_CODE.match(t) or _BRACKETED_CODE.search(t) or _PATH.search(t)) or is_identifier(t)


#: Short capital codes in a row, each with at most one digit (ARPAbet: "HH AA0 R M AA1", "T UW1"): a code string
#: where one has a digit or there are four or more.
_CODE_SEQUENCE = re.compile(r"[A-Z]{1,3}\d?(?: [A-Z]{1,3}\d?)+")
#: Capitals run into a number, a hyphen and a number ("ESO270-017", "PGC012-34"): a catalogue's key.
_CATALOGUE_KEY = re.compile(r"[A-Z]{2,4}\d{2,}-\d{2,3}")
#: A short code in lower case beside one in capitals ("ng NGA", "fr FRA"): a file's two codes for one thing.
_CODE_PAIR = re.compile(r"[a-z]{2,3} [A-Z]{2,3}|[A-Z]{2,3} [a-z]{2,3}")
#: Lower-case words joined by dots ("pygments.lexers.algebra", "org.apache.commons"): a code's path, not a name.
_DOTTED_PATH = re.compile(r"[a-z_][a-z\d_]*(?:\.[a-z_][a-z\d_]*){2,}")


def quantity_label(book: ProfileBook, label: str) -> bool:
    """Whether ``label``'s objects in the graph are numbers, not all years (a count of deaths, a population)."""
    values = book.values.get(relation_key(label))
    return values is not None and values.quantities


def says_kind(profile: RelationProfile, forward: bool) -> bool:
    """Whether every clause that can say a step over ``profile`` (read ``forward`` or back) from its known node names
    the other node's kind ("{the} {that} requires X": "the extension that requires X"); a bare noun's "the member type
    of X" names the relation alone."""
    forms = profile.forms
    if forms is None:
        return True
    clauses = forms.object_clause if forward or profile.symmetric else forms.subject_clause
    return all("{the}" in c for c in clauses)


def count_in_world(profile: RelationProfile, forward: bool) -> str:
    """How many nodes a step over ``profile`` leads to in the world, read ``forward`` or back."""
    return profile.count_for(forward or profile.symmetric)


#: Nodes that must be inside nodes of a kind before the graph's division of them is trusted (``one_container``).
PARTITION_MIN = 5
#: A graph's dates on 1 January (or on the 1st of other months) are stand-ins for a year (a month) where there are
#: at least this many of them ...
PLACEHOLDER_MIN = 3
#: ... and this many times what dates spread evenly over the days of a year would give.
PLACEHOLDER_EXCESS = 4
_ISO_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
#: A statement that puts its object inside its subject (``INSIDE_STATEMENT`` the other way round).
_HOLDS = re.compile(r"\{s\} contains \{o\}")
#: Kinds of thing that stretch across borders, so that being inside one unit of a level does not hold for them: a
#: river or a mountain range lies in several countries, a road in several provinces.
_SPANNING = frozenset({"river", "stream", "creek", "canal", "mountain range", "range", "mountain", "lake", "sea",
                       "ocean", "bay", "gulf", "strait", "desert", "forest", "valley", "glacier", "island group",
                       "archipelago", "region", "area", "zone", "border", "road", "highway", "motorway", "railway",
                       "railway line", "line", "route", "trail", "park", "national park", "basin", "watershed",
                       "ecoregion", "plateau", "plain", "peninsula", "coast", "wetland", "reef"})


#: Kinds of container that nest in one another under one name: London is in England and in the United Kingdom, both
#: countries; a graph that lists one of them does not make it the only one.
_NESTED_LEVELS = frozenset({"country", "nation", "sovereign state", "state", "kingdom", "empire", "territory"})


def leads_to_one(profile: RelationProfile, step: ProgramStep, index: RelationIndex, subject: str) -> bool:
    """Whether a step over ``profile`` from ``subject`` leads to one node in the world: its count there is one, or it
    goes from a thing inside to its one container of the step's kind (``inside_one``)."""
    return count_in_world(profile, step.forward) == "one" or inside_one(profile, step, index, subject)


def inside_one(profile: RelationProfile, step: ProgramStep, index: RelationIndex, subject: str) -> bool:
    """Whether a step over a containment relation, read from the node inside towards a container of the kind the
    question names ("the province that Taliouine is located in", "the judicial canton that contains Bornem"), leads
    to one node in the world although the label names many (a commune is located in its cercle, its province, its
    region): it does where the graph's nodes of that kind divide what lies inside them (``one_container``) and the
    node inside is not a thing that stretches across borders (a river, a road, a region), nor the kind one that nests
    in itself (a country: London is in England and in the United Kingdom)."""
    statement = profile.forms.statement if profile.forms is not None else ""
    towards = True if INSIDE_STATEMENT.fullmatch(statement) else False if _HOLDS.fullmatch(statement) else None
    if towards is None or step.forward != towards or step.kind is None:
        return False
    if (index.kind(subject) or "").lower() in _SPANNING or step.kind.lower() in _NESTED_LEVELS:
        return False
    return index.one_container(step.label, step.forward, step.kind)


def rests_on_whole_graph(program: QueryProgram, book: ProfileBook) -> bool:
    """Whether ``program``'s one answer holds only if the graph holds every fact of its relations: a pin singles a
    node out among those the graph has, and a step that names one of many in the world ("a winner of", "the film
    whose genre is") is one only among the graph's. A chain of steps that each name one thing in the world ("the
    capital of the country of X") holds anywhere."""
    return bool(program.constraints) or any(_rests_on_graph(book, s.label, s.forward) for s in program.steps)


def _rests_on_graph(book: ProfileBook, label: str, forward: bool) -> bool:
    """Whether one step names one thing only among the graph's facts: its count in the world is not one; it is
    read backwards and only the graph's statistics say one (the label's words speak of the forward reading: each
    bronze medallist of a table of 100 m finals won one of its events, not one event in the world); or it leads to
    a quantity (a count of deaths, a price), which is the source's figure, not the world's one."""
    profile = book.profile(label)
    if count_in_world(profile, forward) != "one":
        return True
    if not forward and not profile.symmetric:
        ev = profile.evidence.get("subjects_per_object")
        if ev is None or ev.source in ("graph", "none"):
            return True
    return forward and quantity_label(book, label)


def phrasable(profile: RelationProfile) -> bool:
    """A label that can be a step or a constraint: words with surface forms, and not a type or name relation (the
    type is said by the noun, "Which city ...", and a name is no fact about the thing)."""
    if not (profile.words and profile.forms is not None):
        return False
    word = relation_word(profile.label)
    return word not in TYPE_RELATIONS and word not in NAME_RELATIONS


@dataclass(frozen=True)
class Fact:
    """A candidate pin for a node: the node holds ``(label, value)``, as subject when ``forward``."""

    label: str
    forward: bool
    value: str
    holders: frozenset[str]

    symmetric: bool = False

    def constraint(self, node: int) -> ProgramConstraint:
        return ProgramConstraint(node=node, label=self.label, forward=self.forward, value=self.value,
                                 symmetric=self.symmetric)


@dataclass(frozen=True)
class PinRefusal:
    """Why a node could not be pinned: a reason code and a sentence."""

    code: str
    detail: str


#: Why a program was refused, in the order the refusals apply.
PROGRAM_REFUSALS: tuple[str, ...] = (
    "no_walk",  # no shortcut-free walk of that many hops starts at the seed
    "unphrasable_hop",  # a hop's label has no words or no surface forms
    "sampled",  # the graph samples a larger world and a hop names one of many in it: no pin can be trusted
    "no_pin",  # a hop reaches several nodes (or names one of many in the world) and no fact pins the one meant
    "pins_alone",  # with a scope, every pin that sets a node apart names it alone: the steps before would do no work
    "two_pinned",  # the chain would need more than MAX_PINS pins, or one fact twice: past reading
    "not_unique",  # the program, executed, does not reach exactly one node at every step
    "code_answer",  # the answer is an identifier or a code (a time-zone id, an ISO code): no answer a person gives
    "code_start",  # the start, named in the question, is an identifier or a code: no reader knows it by that
    "quantity",  # a node of the chain is a bare number (no unit, no date): no question can say what it measures
    "placeholder_date",  # a date of the chain is a file's stand-in for a year or a month (1 January 2020)
    "twin_name",  # a name the question shows is another node's but for case, accents, punctuation or its kind's word
    "rank_gap",  # a parent step skips a rank (a genus whose parent is a class): in the world its parent is a family
    "predictable",  # the answer is what nearly every node of that kind has over the last step: no question there
    "unwritable",  # the writer could not put the program into words
)


def skipped_ranks(index: RelationIndex, label: str, forward: bool, a: str, b: str) -> str:
    """Why a step or a fact over ``label`` from ``a`` to ``b`` says what is false in the world, or "": a parent
    label ("parent taxon") between two ranks with a main rank between them (a genus whose parent the graph gives as
    a class: the source skipped the family, which is the genus's parent in the world; ``ranks_between``)."""
    if "parent" not in (w.lower() for w in label_words(label)):
        return ""
    child, parent = (a, b) if forward else (b, a)
    between = ranks_between(index.kind(child), index.kind(parent))
    if not between:
        return ""
    return (f"{label!r} gives the {index.kind(child)} {child!r} the {index.kind(parent)} {parent!r} as its parent, "
            f"past the {' and '.join(between)}: in the world its parent is a {between[0]}")


def node_facts(kg: KnowledgeGraph, node: str, book: ProfileBook, index: RelationIndex, *,
               clause_ok: ClauseOk | None = None) -> list[Fact]:
    """The facts of ``node`` that could pin it: every relation at it with a phrasable label (and, with
    ``clause_ok``, one that can be said as a relative clause in that direction), as ``Fact``s in name order."""
    out: dict[tuple[str, bool, str], Fact] = {}
    for other, d in kg.neighbors(node)[:MAX_PIN_FACTS]:
        if other == node:
            continue
        text, subject = edge_label(d, d.source, d.target)
        if not text:
            continue
        profile = book.profile(text)
        if not phrasable(profile):
            continue
        forward = subject == node
        if clause_ok is not None and not clause_ok(profile, forward):
            continue
        if skipped_ranks(index, text, forward, node, other):  # "whose parent is Mammalia" of a genus
            continue
        key = (relation_key(text), forward or profile.symmetric, other)
        if key not in out:
            out[key] = Fact(text, forward or profile.symmetric, other,
                            frozenset(index.holders(text, forward or profile.symmetric, other, profile.symmetric)),
                            profile.symmetric)
    return list(out.values())


def pin_node(kg: KnowledgeGraph, node: str, among: set[str], *, book: ProfileBook, index: RelationIndex,
             exclude: Iterable[str], answer: str, hops_to_answer: int, need_one: bool, rng: random.Random,
             clause_ok: ClauseOk | None = None, avoid: Iterable[str] = (), narrow_only: bool = False
             ) -> list[Fact] | PinRefusal:
    """The fewest facts of ``node`` that leave it alone in ``among`` (module docstring), at most two; with
    ``need_one`` at least one even when ``among`` is already ``{node}`` (a label that names one of many in the
    world). ``exclude``: names a pin may not use as its value (the chain's nodes). With ``narrow_only`` (a question
    read within the graph's scope) the pins must narrow ``among``, not name ``node`` alone among the nodes of its
    kind (``pins_alone``: the steps before them would do no work). Deterministic in ``rng``."""
    if among == {node} and not need_one:
        return []
    banned = set(exclude) | {node, answer}
    facts: list[Fact] = []
    for f in node_facts(kg, node, book, index, clause_ok=clause_ok):
        if f.value in banned or len(f.holders) < 2 or index.is_code(f.value) or bare_number(f.value) or \
                index.placeholder_date(f.value) is not None or index.twin_of(f.value) is not None or \
                quantity_label(book, f.label) or index.listed_in(f.label, f.value) or _CELL_LIST.search(f.value):
            continue
        if hops_to_answer > 0:
            d = kg.shortest_path_length(f.value, answer, cutoff=hops_to_answer)
            if d is not None and d < hops_to_answer:
                continue
        facts.append(f)
    if not facts:
        return PinRefusal("no_pin", f"no fact of {node!r} can pin it: none is phrasable, held by another node too, "
                                    "and off the chain")
    # Among pins of the same size, one over another label than the steps next to the node reads better: "the
    # station that Line 7 serves and that Line 9 serves" says one phrase twice.
    shun = {relation_key(a) for a in avoid}

    def rank(f: Fact) -> tuple[bool, int]:
        return relation_key(f.label) in shun, len(f.holders)

    def alone(*pins: Fact) -> bool:  # the pins leave ``node`` alone among the nodes of its kind, steps aside
        return narrow_only and _of_kind(index, frozenset.intersection(*(f.holders for f in pins)), node,
                                        index.kind(node)) == {node}

    if among == {node}:
        return _pin_shown_one(node, [f for f in facts if not alone(f)], rank, rng)
    # A fact sets a rival apart only where the graph gives the rival another value of the same relation: a rival
    # with no value of it at all may hold the fact in the world ("the Fulham player whose position is goalkeeper"
    # is not unique because the other goalkeepers' positions are missing; "the district court of Oklahoma whose
    # level is ..." is not unique because the other three districts have no level in the data).
    rivals = among - {node}

    set_apart: dict[int, set[str]] = {}

    def apart(f: Fact) -> set[str]:
        if id(f) not in set_apart:
            tables = index.stated(f.label, f.forward, f.symmetric)
            set_apart[id(f)] = {r for r in rivals - f.holders if any(r in t for t in tables)}
        return set_apart[id(f)]

    singles = [f for f in facts if apart(f) == rivals]
    named_alone, singles = any(alone(f) for f in singles), [f for f in singles if not alone(f)]
    if singles:
        best = min(rank(f) for f in singles)
        return [rng.choice([f for f in singles if rank(f) == best])]
    narrowing = sorted((f for f in facts if apart(f)),
                       key=lambda f: (len(rivals - apart(f)), f.label, f.value))[:MAX_PAIR_FACTS]
    pairs = [(f, g) for f, g in combinations(narrowing, 2)
             if relation_key(f.label) != relation_key(g.label) or f.value != g.value
             if apart(f) | apart(g) == rivals]
    named_alone, pairs = named_alone or any(alone(*p) for p in pairs), [p for p in pairs if not alone(*p)]
    if not pairs and named_alone:
        return PinRefusal("pins_alone", f"every fact that sets {node!r} apart from the other {len(rivals)} nodes the "
                                        "step reaches names it alone among its kind: the steps before would do no work")
    if pairs:
        best = min(len(f.holders) + len(g.holders) for f, g in pairs)
        return list(rng.choice([p for p in pairs if len(p[0].holders) + len(p[1].holders) == best]))
    others = sorted(among - {node})
    shown = ", ".join(repr(o) for o in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return PinRefusal("no_pin", f"{node!r} is one of {len(among)} nodes the step reaches (also {shown}) and no one "
                                "or two of its facts leave it alone (a fact sets apart only a node the graph gives "
                                "another value of it)")


def _pin_shown_one(node: str, facts: list[Fact], rank: Callable[[Fact], tuple[bool, int]], rng: random.Random
                   ) -> list[Fact] | PinRefusal:
    """The pin of a node the step shows alone that must still be pinned (its label names one of many in the world):
    any of ``facts`` pins it in the graph, and the most specific (fewest holders) says most about which one is meant.
    ``facts`` leaves out those that name it alone among its kind within a scope, whose steps before would do no work
    ("the department whose seat is Rouen" is found without the chain that led there); none left: ``pins_alone``."""
    if not facts:
        return PinRefusal("pins_alone", f"every fact that could pin {node!r} names it alone among its kind: the steps "
                                        "before would do no work")
    best = min(rank(f) for f in facts)
    return [rng.choice([f for f in facts if rank(f) == best])]


def _edge_for(kg: KnowledgeGraph, a: str, b: str, label: str, forward: bool, book: ProfileBook) -> PathEdge:
    """The relation between ``a`` and ``b`` with ``label`` read from its subject ``a`` (``forward``) or from its
    object, as a path edge walked from ``a``; ``hop_edge``'s choice when no relation fits."""
    for d in kg.relations_between(a, b):
        text, subject = edge_label(d, d.source, d.target)
        if text and relation_key(text) == relation_key(label) and (
                (subject == a) == forward or book.profile(text).symmetric):
            return edge_as_hop(d, a, b)
    return hop_edge(kg, a, b)


def program_edges(kg: KnowledgeGraph, program: QueryProgram, book: ProfileBook) -> list[PathEdge]:
    """The relation each step of ``program`` walks, as path edges (``_edge_for``)."""
    return [_edge_for(kg, a, b, step.label, step.forward, book)
            for (a, b), step in zip(zip(program.nodes, program.nodes[1:]), program.steps)]


def constraint_edges(kg: KnowledgeGraph, program: QueryProgram, book: ProfileBook) -> list[PathEdge]:
    """The fact behind each constraint of ``program``, walked from the constrained node to the value."""
    return [_edge_for(kg, program.nodes[c.node], c.value, c.label, c.forward, book) for c in program.constraints]


# -- sampling --------------------------------------------------------------------------------------------------------


@dataclass
class ProgramSample:
    """What ``sample_programs`` found: the programs that stand (distinct, in the order found) and, per refusal
    code, how many walks were refused and one example sentence."""

    programs: list[QueryProgram] = field(default_factory=list)
    refusals: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def refuse(self, code: str, detail: str) -> None:
        self.refusals[code] += 1
        self.examples.setdefault(code, detail)

    def why_none(self) -> tuple[str, str]:
        """The most common refusal and its example, for a job that found no program."""
        if not self.refusals:
            return "no_walk", "no walk was tried"
        code = max(self.refusals, key=lambda c: (self.refusals[c], -PROGRAM_REFUSALS.index(c)))
        return code, self.examples[code]


def _layers(kg: KnowledgeGraph, start: str, hops: int) -> dict[str, int]:
    dist = {start: 0}
    frontier = [start]
    for level in range(1, hops + 1):
        nxt = []
        for u in frontier:
            for v in kg.neighbor_names(u):
                if v not in dist:
                    dist[v] = level
                    nxt.append(v)
        frontier = nxt
    return dist


def _steps_from(kg: KnowledgeGraph, u: str, level: int, dist: dict[str, int], book: ProfileBook,
                step_ok: StepKeep | None = None) -> list[tuple[str, str, bool]]:
    """``(next node, label, forward)`` for every phrasable relation from ``u`` to a node of the next layer, none to a
    bare quantity (``build_program`` refuses every walk through one: a walk that would end so is not taken), and,
    with ``step_ok``, only the steps it allows (``_one_in_world``)."""
    return [step for step in _phrasable_steps(kg, u, book) if dist.get(step[0]) == level + 1
            and (step_ok is None or step_ok(u, *step))]


#: Whether a walk may take the step ``(from node, next node, label, forward)``.
StepKeep = Callable[[str, str, str, bool], bool]


def _one_in_world(book: ProfileBook, index: RelationIndex) -> StepKeep:
    """The steps a walk over a sampled graph may take: those that lead to one node in the world (``build_program``
    refuses every other one there, pinned or not), so the walks a sample draws are not spent on them and a seed's
    depth is found where it stands (a genus -> its family -> its order, past the genera of the family)."""
    def keep(u: str, v: str, label: str, forward: bool) -> bool:
        step = ProgramStep(label=label, forward=forward, kind=index.kind(v))
        return leads_to_one(book.profile(label), step, index, u)
    return keep


#: Nodes whose phrasable steps a graph keeps worked out (``_phrasable_steps``); past it they are worked out anew.
MAX_STEP_MEMO = 200_000


def _phrasable_steps(kg: KnowledgeGraph, u: str, book: ProfileBook) -> list[tuple[str, str, bool]]:
    """``(next node, label, forward)`` for every phrasable relation from ``u`` to a node that is no bare quantity,
    in neighbour order; kept on the graph for the book they were read with (a book's readings do not change)."""
    memo = kg.__dict__.get("_phrasable_steps")
    if memo is None or memo[0] is not book:
        memo = kg.__dict__["_phrasable_steps"] = (book, {})
    hit = memo[1].get(u)
    if hit is None:
        hit = []
        for v, d in kg.neighbors(u):
            text, subject = edge_label(d, d.source, d.target)
            if text and phrasable(book.profile(text)) and not bare_number(v) and not quantity_label(book, text):
                hit.append((v, text, subject == u))
        if len(memo[1]) < MAX_STEP_MEMO:
            memo[1][u] = hit
    return hit


#: Nodes of one layer beyond which the walks are not pruned in advance (a hub's neighbourhood).
MAX_PRUNED_LAYER = 20_000


def _live_steps(kg: KnowledgeGraph, start: str, hops: int, dist: dict[str, int], book: ProfileBook,
                step_ok: StepKeep | None = None) -> dict[str, list[tuple[str, str, bool]]]:
    """For each node a walk may stand on, the steps that can still end ``hops`` hops out: worked out backwards from
    the last layer, so a walk never strands. A layer past ``MAX_PRUNED_LAYER`` nodes (a hub's neighbourhood) is
    left out: its nodes' steps are worked out when a walk reaches them, and the layers before it are not pruned."""
    layers: dict[int, list[str]] = defaultdict(list)
    for node, level in dist.items():
        layers[level].append(node)
    alive: set[str] | None = set(layers[hops])
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for level in range(hops - 1, -1, -1):
        nodes = sorted(layers[level])
        if len(nodes) > MAX_PRUNED_LAYER:
            alive = None
            continue
        keep: set[str] = set()
        for u in nodes:
            opts = [o for o in _steps_from(kg, u, level, dist, book, step_ok) if alive is None or o[0] in alive]
            if opts:
                out[u] = opts
                keep.add(u)
        alive = keep
    return out


#: Pins a program may hold in all (on one node or two): a third clause stacks the question past reading.
MAX_PINS = 2


def program_lines(program: QueryProgram) -> list[str]:
    """A program in a few lines a reader can check: its kind and steps (``start -label-> node <-label- answer``),
    then each pin as ``pin: node -label-> value`` (``<-`` when the pinned node is the object); a symmetric label,
    which holds whichever way the graph stores it, has no arrow head (``-borders-``)."""
    walk = [program.start]
    for i, step in enumerate(program.steps, start=1):
        walk.append(f"-{step.label}- {program.nodes[i]}" if step.symmetric else
                    f"-{step.label}-> {program.nodes[i]}" if step.forward else f"<-{step.label}- {program.nodes[i]}")
    out = [f"program: {program.kind}, {program.hops} step(s): {' '.join(walk)}"]
    for c in program.constraints:
        node = program.nodes[c.node]
        out.append(f"pin: {node} -{c.label}- {c.value}" if c.symmetric else
                   f"pin: {node} -{c.label}-> {c.value}" if c.forward else f"pin: {node} <-{c.label}- {c.value}")
    return out


def program_depth(kg: KnowledgeGraph, start: str, *, book: ProfileBook, clause_ok: ClauseOk | None = None,
                  max_steps: int = 3, writable: Callable[[QueryProgram], bool] | None = None,
                  scoped: bool = False, whole: bool = True) -> int:
    """The most steps (up to ``max_steps``) of a program that stands from ``start`` (and, with ``writable``, that
    it accepts), found by a few walks of each length, longest first; 0 when none does."""
    for hops in range(max_steps, 0, -1):
        found = sample_programs(kg, start, hops, count=2, book=book, max_walks=10, clause_ok=clause_ok,
                                scoped=scoped, whole=whole).programs
        if any(writable is None or writable(p) for p in found):
            return hops
    return 0


def ends_refusal(index: RelationIndex, start: str, answer: str) -> PinRefusal | None:
    """Why a program from ``start`` to ``answer`` cannot be asked whatever its steps, or None: an answer or a start
    that is an identifier or a code (``RelationIndex.is_code``), or an answer that is a point's coordinates. One rule
    for the template writer's programs and the LLM writer's paths."""
    for end, code, said in ((answer, "code_answer", "the answer"), (start, "code_start", "the start")):
        script = other_script(display_name(end))
        if script is not None:
            script = script if len(script) <= 3 else script.title()  # "CJK", "Bengali"
            return PinRefusal(code, f"{said} {end!r} is written in {script} script, with no Latin letter: an English "
                                    "question cannot show it as written")
    if index.is_code(answer):
        return PinRefusal("code_answer", f"the answer {answer!r} is an identifier or a code, not a name a person "
                                         "would answer with")
    if index.is_code(start):
        return PinRefusal("code_start", f"the start {start!r} is an identifier or a code, not a name a reader "
                                        "knows it by")
    if coordinates(answer):
        return PinRefusal("quantity", f"the answer {answer!r} is a point's coordinates: a place covers an area, and "
                                      "any point of it answers as well")
    return None


def walk_refusal(walk: Sequence[str], steps: Sequence[ProgramStep], *, book: ProfileBook,
                 index: RelationIndex) -> PinRefusal | None:
    """Why no program of ``walk`` can be asked whatever its pins, or None: its ends (``ends_refusal``), an answer
    that reads as a heading, a bare quantity on it, a date that stands in for a coarser one, a parent step that
    skips a rank, a start that has a twin, an answer the last step's kind nearly always has, a start that is an item
    of a list."""
    answer = walk[-1]
    ends = ends_refusal(index, walk[0], answer)
    if ends is not None:
        return ends
    unread = heading_not_name(display_name(answer))
    if unread is not None:
        return PinRefusal("code_answer", f"the answer: {unread}")
    bare = next((n for n in walk if bare_number(n)), None)
    if bare is None:
        bare = next((walk[i] if s.forward else walk[i - 1] for i, s in enumerate(steps, start=1)
                     if quantity_label(book, s.label)), None)
    if bare is not None:
        return PinRefusal("quantity", f"{bare!r} is a bare quantity: the graph gives no unit or date for it (an area "
                                      "in what, a population when), so a question cannot say what it measures")
    stand_in = next((why for why in map(index.placeholder_date, walk) if why is not None), None)
    if stand_in is not None:
        return PinRefusal("placeholder_date", stand_in)
    gap = next((why for why in (skipped_ranks(index, s.label, s.forward, walk[i - 1], walk[i])
                                for i, s in enumerate(steps, start=1)) if why), None)
    if gap is not None:
        return PinRefusal("rank_gap", gap)
    twin = index.twin_of(walk[0])
    if twin is not None:
        return PinRefusal("twin_name", f"the start {walk[0]!r} is also {twin!r} but for case, accents, "
                                       "punctuation or its kind's word: a reader cannot tell which the question means")
    if steps and not book.profile(steps[-1].label).symmetric:
        last = steps[-1]
        having, of = index.share(last.label, last.forward, index.kind(walk[-2]), answer)
        if of >= PREDICTABLE_MIN and having >= PREDICTABLE_SHARE * of:
            kind = index.kind(walk[-2]) or "node"
            return PinRefusal("predictable", f"{answer!r} is the {last.label!r} of {having} of the {of} {kind} nodes "
                                             "that have one: the answer is guessed without the question")
    if steps and not steps[0].forward and index.listed_in(steps[0].label, walk[0]):
        return PinRefusal("not_unique", f"{walk[0]!r} is also an item of other {steps[0].label!r} values (a list "
                                        "such as 'fair, green, yellow'): 'whose ... is' it fits those nodes too")
    return None


def _of_kind(index: RelationIndex, nodes: Iterable[str], node: str, kind: str | None) -> set[str]:
    """The nodes a question's noun for ``node`` (its ``kind``) fits: those of that kind, or of a kind that is itself
    a node of ``node``'s type (a hierarchy inside one type); all of them when ``node`` has no kind."""
    if kind is None:
        return set(nodes)
    typed = index.type_of(node)
    return {x for x in nodes if index.fits(x, kind) or (typed and index.type_of(x) == typed and
                                                           index.kind_is_a(x, typed))}


#: Nouns English uses of any stretch of land, whatever level the graph gives it: "the territory served by X" may be
#: a country, "the region it trades in" a state.
_BROAD_PLACES = frozenset({"territory", "region", "area", "zone", "place", "location", "land", "locality"})


def _broad_place_rivals(index: RelationIndex, node: str, step: ProgramStep, symmetric: bool) -> set[str]:
    """The places a step's own facts reach from ``node`` that the question's noun names though the graph gives them
    another kind: where the noun is a broad one ("territory", "region"), any place (``PLACE_KINDS``; brands_dbpedia,
    seen: "the territory served by Fathers & Sons", which serves Belgium, a country, and Metropolitan France, a
    territory). Only the graph's own facts count: a province that a region contains through the region's country is
    no rival to "the region that contains it"."""
    if kind_head(step.kind) not in _BROAD_PLACES:
        return set()
    return {x for x in index.reach(node, step.label, step.forward, symmetric, direct=True)
            if kind_head(index.kind(x)) in PLACE_KINDS}


def build_program(kg: KnowledgeGraph, walk: Sequence[str], steps: Sequence[ProgramStep], *, book: ProfileBook,
                  index: RelationIndex, rng: random.Random, clause_ok: ClauseOk | None = None, scoped: bool = False,
                  whole: bool = True) -> QueryProgram | PinRefusal:
    """The program of one walk: each step pinned where it needs it (``pin_node``), then executed. ``scoped``: the
    question will open with what the graph covers (``[quality] scopes``), so a step the graph shows one node for
    needs no pin even where its label names one of many in the world: "Among Sweden's counties and municipalities,
    which city is the capital of the county that Ludvika is located in?" holds as worded, and a pin such as "whose
    country is Sweden" (every county's) would only pad it. Not ``whole`` (``[quality] sampled``): the graph samples
    a larger world (a name index's brands, a few of the genes an ontology knows), so no step may name one of many in
    the world, pinned or not: the facts that would set the one meant apart are not all there."""
    constraints: list[ProgramConstraint] = []
    answer = walk[-1]
    refused = walk_refusal(walk, steps, book=book, index=index)
    if refused is not None:
        return refused
    hops = len(steps)
    # a middle node is counted among the nodes of its kind only where every clause that can say the step names the
    # kind ("the extension that requires X"); "the member type of X" names none, so every member type of X is a rival
    steps = [s.model_copy(update={
        "kind": index.kind(walk[i]) if i == hops or says_kind(book.profile(s.label), s.forward) else None,
        "symmetric": book.profile(s.label).symmetric}) for i, s in enumerate(steps, start=1)]
    for i, step in enumerate(steps, start=1):
        profile = book.profile(step.label)
        among = index.reach(walk[i - 1], step.label, step.forward, profile.symmetric)
        if step.kind is not None:
            # a node of another kind stays where that kind is itself a node of this one's type: the kinds come from
            # a hierarchy inside one type ("subsets" is a "node property", a node of the type "slots" as "id" is),
            # so "the slot of X" fits both; a class outside the type ("private domain", a list's section) sets apart
            among = _of_kind(index, among, walk[i], step.kind)
        if step.kind is not None:
            # "the territory served by X" names X's country too, though the graph types it otherwise
            among |= _broad_place_rivals(index, walk[i - 1], step, profile.symmetric)
        if walk[i] not in among:  # the index reads the relation another way than the walk did
            return PinRefusal("not_unique", f"step {i} over {step.label!r} does not reach {walk[i]!r}")
        if not step.forward and not profile.symmetric and step.kind is not None and \
                count_in_world(profile, False) != "one" and index.attribute_of_kind(step.label, True, step.kind):
            # an inverse step reaches the nodes the graph records the fact for; where the relation is an attribute
            # the nodes of the kind share, one with no value recorded may hold this one in the world ("the dialect
            # whose macroarea is North America" is one in a graph where most dialects have no macroarea), so it is
            # a rival the pins must set apart too
            among = among | index.unstated(step.label, True, step.kind)
        # With a scope, a middle step the graph shows one node for stands as the data's (the scope says so); the
        # answer's own step never does: "what is a field of work of X" asks for one of several in the world; nor does
        # a step from a column's value, which describes its rows without naming one ("the gemstone whose colour is
        # light green", "whose locality is Nepal": other gems of the data are light green or found in Nepal, in
        # words the table spelt otherwise)
        many = not leads_to_one(profile, step, index, walk[i - 1])
        need_one = many and (not scoped or i == hops or (kg is not None and column_value(kg, walk[i - 1])))
        if many and not whole:
            return PinRefusal("sampled", f"step {i} over {step.label!r} names one of many in the world, and the "
                                         "graph samples it ([quality] sampled): what would set the one meant apart "
                                         "is not all there")
        if len(among) == 1 and not need_one:
            continue
        found = pin_node(kg, walk[i], among, book=book, index=index, exclude=walk, answer=answer,
                         hops_to_answer=hops - i, need_one=need_one, rng=rng, clause_ok=clause_ok,
                         avoid=[s.label for s in steps[i - 1:i + 1]],
                         # within the scope the pins must narrow what the steps reach: "the game whose home team is
                         # Fiorentina and whose away team is Milan and whose season is the season of X" (every game's
                         # season) is a lookup by its pins; read in the world, "filmed in Paris" holds for many films
                         narrow_only=scoped)
        if isinstance(found, PinRefusal):
            return found
        if found and (len(constraints) + len(found) > MAX_PINS):
            return PinRefusal("two_pinned", f"the steps to {walk[constraints[0].node]!r} and to {walk[i]!r} need "
                                            f"{len(constraints) + len(found)} pins, more than {MAX_PINS}")
        said = {(relation_key(c.label), c.value) for c in constraints}
        if any((relation_key(f.label), f.value) in said for f in found):
            return PinRefusal("two_pinned", f"{walk[i]!r} would be pinned by the fact that already pins an earlier "
                                            "node: the question would say it twice")
        constraints.extend(f.constraint(i) for f in found)
    program = QueryProgram(kind="conjunction" if constraints else "chain", start=walk[0], steps=list(steps),
                           constraints=constraints, nodes=list(walk))
    why = stands(program, index, book)
    if why is not None:
        return PinRefusal("not_unique", why)
    return program


def sample_programs(kg: KnowledgeGraph, start: str, hops: int, *, count: int = 8, seed: int = 0,
                    book: ProfileBook | None = None, max_walks: int | None = None,
                    clause_ok: ClauseOk | None = None, scoped: bool = False, whole: bool = True) -> ProgramSample:
    """Up to ``count`` distinct programs of ``hops`` steps from ``start`` (module docstring); every refused walk
    counted by reason. Deterministic in (graph, start, hops, seed). ``scoped``, ``whole``: as ``build_program``."""
    if hops < 1:
        raise ValueError(f"a program needs at least one step, got hops={hops}")
    kg.entity(start)
    book = book if book is not None else book_for_graph(kg)
    index = relation_index(kg)
    dist = _layers(kg, start, hops)
    out = ProgramSample()
    if max(dist.values()) < hops:
        out.refuse("no_walk", f"no node is {hops} hops from {start!r}")
        return out
    rng = random.Random(f"programs\x00{seed}\x00{start}\x00{hops}")
    used: Counter = Counter()
    seen: set[tuple] = set()
    step_ok = None if whole else _one_in_world(book, index)  # a sampled graph: no step that names one of many
    memo = _live_steps(kg, start, hops, dist, book, step_ok)
    if not memo.get(start):
        out.refuse("no_walk", f"no walk of {hops} phrasable, shortcut-free hops starts at {start!r}")
        return out
    walks = 30 * count if max_walks is None else max_walks
    key_of: dict[str, str] = {}  # label -> relation_key, and node -> sqrt(1 + degree): worked out once a sample
    spread: dict[str, float] = {}
    # A node's options' cumulative weights, kept until a new walk changes ``used`` (most walks repeat one already
    # seen and change nothing); a draw is ``random.choices``' own (one ``random()`` against the running totals), so the
    # walks are the same as with the weights worked out at every step.
    drawn: dict[str, tuple[int, list, list[float]]] = {}
    version = 0

    def weight(v: str, label: str) -> float:
        key = key_of.get(label)
        if key is None:
            key = key_of[label] = relation_key(label)
        hub = spread.get(v)
        if hub is None:
            hub = spread[v] = math.sqrt(1 + kg.degree(v))
        return 1.0 / (1 + used[key]) / hub

    for _ in range(walks):
        walk = [start]
        steps: list[ProgramStep] = []
        for level in range(hops):
            options = memo.get(walk[-1])
            if options is None:  # a node of a layer too large to prune in advance
                options = memo[walk[-1]] = _steps_from(kg, walk[-1], level, dist, book, step_ok)
            if not options:
                break
            hit = drawn.get(walk[-1])
            if hit is None or hit[0] != version or hit[1] is not options:
                hit = drawn[walk[-1]] = (version, options,
                                         list(itertools.accumulate(weight(v, label) for v, label, _ in options)))
            totals = hit[2]
            v, label, forward = options[bisect.bisect(totals, rng.random() * (totals[-1] + 0.0), 0, len(totals) - 1)]
            walk.append(v)
            steps.append(ProgramStep(label=label, forward=forward))
        if len(steps) < hops:
            out.refuse("no_walk", f"a walk from {start!r} stopped at {walk[-1]!r}: no phrasable relation leads on")
            continue
        key = (tuple(walk), tuple((key_of[s.label], s.forward) for s in steps))  # every step's label was weighed
        if key in seen:
            continue
        seen.add(key)
        for s in steps:
            used[key_of[s.label]] += 1
        version += 1
        built = build_program(kg, walk, steps, book=book, index=index, rng=rng, clause_ok=clause_ok, scoped=scoped,
                              whole=whole)
        if isinstance(built, PinRefusal):
            out.refuse(built.code, built.detail)
            continue
        out.programs.append(built)
        if len(out.programs) >= count:
            break
    return out


# -- RDF and SPARQL --------------------------------------------------------------------------------------------------

BASE_IRI = "https://hopforge.invalid/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
#: The type noun a question calls an entity by ("city"), as a literal: what a step's ``kind`` matches.
KIND_IRI = f"{BASE_IRI}vocab/kind"


def entity_iri(domain: str, name: str) -> str:
    return f"{BASE_IRI}{quote(domain, safe='')}/entity/{quote(name, safe='')}"


def relation_iri(domain: str, label: str) -> str:
    return f"{BASE_IRI}{quote(domain, safe='')}/relation/{quote(relation_key(label), safe='')}"


def _literal(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r"))
    return f'"{escaped}"'


def rdf_lines(kg: KnowledgeGraph) -> Iterator[str]:
    """The snapshot's RDF form as N-Triples lines (module docstring): entity labels, then the facts, sorted.
    N-Triples is also valid Turtle."""
    domain = kg.domain
    index = relation_index(kg)
    for name in sorted(kg.nodes()):
        yield f"<{entity_iri(domain, name)}> <{RDFS_LABEL}> {_literal(name)} ."
        kind = index.kind(name)
        if kind is not None:
            yield f"<{entity_iri(domain, name)}> <{KIND_IRI}> {_literal(kind)} ."
    for s, key, o in index.triples():
        yield f"<{entity_iri(domain, s)}> <{relation_iri(domain, key)}> <{entity_iri(domain, o)}> ."


def write_rdf(kg: KnowledgeGraph, path: str | Path) -> int:
    """``rdf_lines`` written to ``path`` (N-Triples, which Turtle also reads) through a temporary file, so a failed
    write leaves no partial file; returns the number of triples."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for line in rdf_lines(kg):
            f.write(line + "\n")
            n += 1
    tmp.replace(path)
    return n


def _pattern(domain: str, a: str, label: str, forward: bool, b: str, symmetric: bool) -> str:
    p = f"<{relation_iri(domain, label)}>"
    if symmetric:
        return f"{a} {p}|^{p} {b} ."
    return f"{a} {p} {b} ." if forward else f"{b} {p} {a} ."


def program_sparql(program: QueryProgram, domain: str) -> str:
    """The program as one SPARQL 1.1 SELECT over the snapshot's RDF form: it returns the answer set."""
    lines = [f"  BIND(<{entity_iri(domain, program.start)}> AS ?x0)"]
    for i, step in enumerate(program.steps, start=1):
        lines.append("  " + _pattern(domain, f"?x{i - 1}", step.label, step.forward, f"?x{i}", step.symmetric))
        if step.kind is not None:
            lines.append(f"  ?x{i} <{KIND_IRI}> {_literal(step.kind)} .")
        for c in program.constraints_on(i):
            lines.append("  " + _pattern(domain, f"?x{i}", c.label, c.forward, f"<{entity_iri(domain, c.value)}>",
                                         c.symmetric))
    return f"SELECT DISTINCT ?x{program.hops} WHERE {{\n" + "\n".join(lines) + "\n}"


def iri_name(iri: str, domain: str) -> str:
    """The entity name an entity IRI of ``domain`` stands for."""
    prefix = f"{BASE_IRI}{quote(domain, safe='')}/entity/"
    if not iri.startswith(prefix):
        raise ValueError(f"{iri!r} is not an entity IRI of the {domain!r} graph")
    return unquote(iri[len(prefix):])


__all__ = ["BASE_IRI", "KIND_IRI", "Fact", "MAX_PAIR_FACTS", "MAX_PIN_FACTS", "PREDICTABLE_MIN", "PREDICTABLE_SHARE",
           "PROGRAM_REFUSALS", "PinRefusal",
           "MAX_PINS", "ProgramSample", "RelationIndex", "build_program", "ends_refusal", "program_depth", "program_lines", "code_like", "constraint_edges", "count_in_world", "entity_iri", "execute", "iri_name",
           "node_facts", "phrasable", "pin_node", "program_edges", "program_sparql", "rdf_lines", "relation_index", "relation_iri",
           "rests_on_whole_graph", "sample_programs", "quantity_label", "stands", "write_rdf", "PARTITION_MIN",
           "inside_one", "skipped_ranks"]
