"""Run PyPI's gcp-storage-emulator (GCS JSON API, in memory) with the one endpoint it lacks: `objects.move`.

Its listen backlog is raised too (see main). gcsfs renames with `POST /b/B/o/SRC/moveTo/o/DST` (the real service's Objects: move). The emulator answers 501,
which gcsfs retries with backoff for ~33 s before falling back to copy + delete. Here the endpoint does what the
real service does for a flat bucket: the object appears under the new name and is gone under the old one.

    python tests/remote/gcs_emulator.py HOST PORT BUCKET
"""

from __future__ import annotations

import http.server
import logging
import os
import sys
from http import HTTPStatus

from gcp_storage_emulator import server
from gcp_storage_emulator.exceptions import Conflict, NotFound
from gcp_storage_emulator.handlers import objects
from gcp_storage_emulator.settings import API_ENDPOINT


def move(request, response, storage, *args, **kwargs) -> None:
    bucket, src, dst = request.params["bucket_name"], request.params["object_id"], request.params["dest_object_id"]
    try:
        dest_obj = objects._copy(request.base_url, storage, bucket, src, bucket, dst)
        objects._delete(storage, bucket, src)
        response.json(dest_obj)
    except NotFound:
        response.status = HTTPStatus.NOT_FOUND
    except Conflict as err:
        objects._handle_conflict(response, err)


MOVE_ROUTE = (
    rf"^{API_ENDPOINT}/b/(?P<bucket_name>[-.\w]+)/o/(?P<object_id>.*[^/]+)/moveTo/o/(?P<dest_object_id>.*[^/]+)$",
    {server.POST: move},
)


def main(host: str, port: int, bucket: str) -> None:
    server.HANDLERS = (MOVE_ROUTE, *server.HANDLERS)  # before the generic object route
    # one request at a time: gcsfs opens many connections at once, and with the default backlog of 5 the kernel
    # drops their SYNs (each retried after 1 s); headers and body go out in separate writes (no Nagle wait)
    http.server.HTTPServer.request_queue_size = 1024
    server.RequestHandler.disable_nagle_algorithm = True
    if os.environ.get("GCS_EMULATOR_LOG"):  # one line per request, for profiling
        logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(message)s")
    srv = server.create_server(host, port, in_memory=True, default_bucket=bucket)
    srv.run()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
