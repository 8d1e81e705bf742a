"""A background HNSW build: ``python -m tasks.env.ann_build --matrix M.npy --out G.usearch --lock-fd N``.

Started by ``tasks.env.index.AnnBuild.start`` (a tool server's cold start) while the server answers by the exact
scan. It views the cached entity (or chunk) matrix, builds its graph (``AnnIndex.build``) at a lower priority and
writes it atomically (temporary file, then rename). Descriptor ``N`` holds the build's lock (``<out>.lock``) from
before this process ran until it exits. A build that raises writes its one-line reason to ``<out>.failed``, logs
it, and exits with status 1; the servers keep searching exactly.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

from tasks.env.index import AnnIndex, _claim_failure, _one_line

log = logging.getLogger("tasks.env.ann_build")


def build(matrix_path: Path, out: Path, threads: int = 0) -> AnnIndex:
    """The graph of the matrix cached at ``matrix_path``, written to ``out``."""
    matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
    if matrix.ndim != 2 or matrix.dtype != np.float32:
        raise ValueError(f"{matrix_path.name} is not a float32 matrix (shape {matrix.shape}, {matrix.dtype})")
    graph = AnnIndex.build(np.asarray(matrix), threads or None)
    graph.save(out)
    return graph


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--matrix", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lock-fd", type=int, default=None, help="the descriptor holding the build's lock (kept open)")
    ap.add_argument("--threads", type=int, default=0, help="insertion threads (0: every core)")
    ap.add_argument("--nice", type=int, default=0, help="added to this process's niceness")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.nice:
        try:
            os.nice(args.nice)
        except OSError:
            pass
    started = time.perf_counter()
    try:
        graph = build(args.matrix, args.out, args.threads)
    except Exception as exc:  # noqa: BLE001 - any failure is reported the same way: one line, exact search kept
        line = (f"the background HNSW build of {args.out.name} failed: {type(exc).__name__}: {_one_line(exc)}; "
                "searches stay on the exact scan")
        if _claim_failure(args.out, line):
            log.error("%s", line)
        return 1
    log.info("HNSW graph of %d rows written to %s in %.1f s", len(graph), args.out.name,
             time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
