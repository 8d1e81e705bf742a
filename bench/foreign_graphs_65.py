"""Rebuild the SIXTY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs65/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
mobile-broadband-provider-info (Debian: the mobile broadband service provider database that NetworkManager and
ModemManager read to set up a mobile data connection: per country, the mobile service providers, each with its GSM
network ids (mobile country code and network code) or CDMA system ids and its access points, each access point with
its usage and plan types). The script only renames the XML's elements to snake_case labels, takes the file whole but
for the rules stated in the code, and writes the file; see docs/programs/graphs65/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_63.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.*` with `tarfile`, the XML file with `xml.etree`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs65-src && cd /tmp/graphs65-src
    apt-get update && apt-get download mobile-broadband-provider-info=20230416-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_65.py --src /tmp/graphs65-src            # writes docs/programs/graphs65/*.jsonl
    python3 bench/foreign_graphs_65.py --src /tmp/graphs65-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm", architecture "all".)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a country is its `name` ("Andorra"), a provider its `name` without a language
attribute ("Andorra Telecom (Mobiland)"), an access point its `name` or, where it has none, its `value` (the APN
itself: "internetand"), a GSM network id its `mcc` and `mnc` joined by a space ("213 03"), a mobile country code its
`mcc` ("213"), a CDMA system id its `value`, a usage, plan or authentication its `type` or `method` ("internet",
"postpaid", "chap"). Records of one kind that show one name are named apart by a telling value in parentheses, as
the code says."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs65"

# The package file, as `apt-get download` names it, with its SHA-256.
MBPI_DEB = "mobile-broadband-provider-info_20230416-1_all.deb"
SOURCES = {
    MBPI_DEB: "ce78f3afc0b7ca4f9c0d79a85f80052c2cb39b94dd70a4dd242bca6b194dae85",
}

PROVIDERS_XML = "usr/share/mobile-broadband-provider-info/serviceproviders.xml"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
PRIORITY = ("access_point", "provider", "country", "network_id", "mcc", "sid", "usage", "plan", "authentication")


def plain_name(element: ET.Element) -> str:
    """The element's first `name` child without a language attribute (a provider may add one in its own script:
    "Билайн" beside "Beeline"); the first `name` child if all have one."""
    names = element.findall("name")
    plain = [n for n in names if XML_LANG not in n.attrib]
    chosen = plain or names
    return text(chosen[0].text or "") if chosen else ""


def providers_snake(src: Path) -> Graph:
    g = Graph("providers_snake", "jsonl", priority=PRIORITY)
    files = deb_files(package_file(src, MBPI_DEB, SOURCES), lambda p: p == PROVIDERS_XML)
    root = ET.fromstring(files[PROVIDERS_XML])

    # providers: key (country code, position in the country); one name may be several countries' providers
    # ("Vodafone", "Orange"), told apart by the country's name ("Vodafone (Albania)")
    countries: dict[str, str] = {}
    providers: dict[tuple[str, int], ET.Element] = {}
    for country in root.findall("country"):
        code = country.get("code") or ""
        countries[code] = plain_name(country)
        if not countries[code]:
            raise SystemExit(f"providers_snake: country {code!r} without a name")
        for i, provider in enumerate(country.findall("provider")):
            providers[(code, i)] = provider
    # where one country has two providers of one name (three "Mineo" in Japan, one per host network), they are told
    # apart by country and first GSM network id ("Mineo (Japan, 440 10)")
    provider_raw = {k: plain_name(p) for k, p in providers.items()}
    per_country: dict[tuple[str, str], set] = defaultdict(set)
    for k, name in provider_raw.items():
        per_country[(name, k[0])].add(k)

    def first_network(p: ET.Element) -> str:
        net = p.find("gsm/network-id")
        return "" if net is None else f", {text(net.get('mcc') or '')} {text(net.get('mnc') or '')}"

    provider_names = named_apart(g, provider_raw, {
        k: countries[k[0]] + (first_network(p) if len(per_country[(provider_raw[k], k[0])]) > 1 else "")
        for k, p in providers.items()})

    # access points: one per provider, name and APN value; an entry the provider repeats with another plan or other
    # credentials (the same name and APN for "prepaid" and "postpaid") is the same access point, its plans and usages
    # united. Many bear one name ("internet", "MMS"): told apart by their provider's node name, and where one
    # provider has two of one name, by provider and APN value ("Internet (Telia, online.telia.se)")
    access: dict[tuple[tuple[str, int], str, str], list[ET.Element]] = defaultdict(list)
    for key, provider in providers.items():
        for apn in provider.findall("gsm/apn"):
            value = text(apn.get("value") or "")
            access[(key, plain_name(apn) or value, value)].append(apn)
    by_provider: dict[tuple[str, tuple[str, int]], set] = defaultdict(set)  # (name, provider) -> access points
    for k in access:
        by_provider[(k[1], k[0])].add(k)
    tell = {k: (provider_names[k[0]] if len(by_provider[(k[1], k[0])]) == 1 else f"{provider_names[k[0]]}, {k[2]}")
            for k in access}
    apn_names = named_apart(g, {k: k[1] for k in access}, tell)
    g.left_out["access point entry repeated for another plan (one node)"] += sum(len(v) - 1 for v in access.values())

    for key, provider in sorted(providers.items()):
        node = ("provider", provider_names[key])
        g.add(node, "country", ("country", countries[key[0]]))
        for net in provider.findall("gsm/network-id"):
            mcc, mnc = text(net.get("mcc") or ""), text(net.get("mnc") or "")
            if not mcc or not mnc:
                g.left_out["network id without mcc or mnc"] += 1
                continue
            g.add(node, "network_id", ("network_id", f"{mcc} {mnc}"))
            g.add(("network_id", f"{mcc} {mnc}"), "mcc", ("mcc", mcc))
        for sid in provider.findall("cdma/sid"):
            if text(sid.get("value") or ""):
                g.add(node, "sid", ("sid", text(sid.get("value"))))
        if provider.find("cdma/apn") is not None:
            g.left_out["CDMA access point (not taken)"] += len(provider.findall("cdma/apn"))
    for key, entries in sorted(access.items(), key=lambda kv: kv[0]):
        node = ("access_point", apn_names[key])
        g.add(node, "provider", ("provider", provider_names[key[0]]))
        for apn in entries:
            for usage in apn.findall("usage"):
                g.add(node, "usage", ("usage", text(usage.get("type") or "")))
            for plan in apn.findall("plan"):
                g.add(node, "plan", ("plan", text(plan.get("type") or "")))
            for auth in apn.findall("authentication"):
                g.add(node, "authentication", ("authentication", text(auth.get("method") or "")))
    return g


def build_all(src: Path) -> list[Graph]:
    return [providers_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
