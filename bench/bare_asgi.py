"""The stack's ceiling for ``bench/bench_tools.py``: a bare ASGI endpoint that answers every request with one
constant JSON string, served exactly as the tool server is (same uvicorn loop and HTTP parser, same number of
forked workers on one socket, ``flows.tool_workers.serve_workers``). Whatever the tool server loses against it is
the cost of the tool server itself.

    python bench/bare_asgi.py --port 8799 --workers 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

BODY = b'{"rendered_content":"ok"}'
HEADERS = [(b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:  # read the body, as any endpoint taking a JSON body must
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


def main() -> None:
    from flows.tool_workers import serve_workers

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    serve_workers(lambda: app, args.host, args.port, args.workers, log_level="warning")


if __name__ == "__main__":
    main()
