"""Graph stage: chunks (through LightRAG) or graph files in; entity and relation records and snapshots out.

``build`` runs LightRAG per domain, ``importers`` read GraphML / triples / RoG subgraphs, ``entity_resolution``
merges spelling variants, ``store`` checks and content-hashes the records (``warehouse.graphs`` stores them), ``kg`` is the graph class every later stage
uses, ``report`` judges whether a built graph is usable.
"""
