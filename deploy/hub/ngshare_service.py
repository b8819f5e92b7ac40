"""ngshare, the course's exchange on a hub without a shared disk, as a JupyterHub service.

The hub starts this (jupyterhub_config.py, `c.JupyterHub.services`) with the service's
environment (JUPYTERHUB_SERVICE_URL, _PREFIX, API_URL, API_TOKEN, CLIENT_ID). It is ngshare 0.6's
own application (its database, its permissions: who teaches, who takes the course), listening
only on the address the hub gave it: ngshare's `main` listens on every interface (0.0.0.0),
and here servers listen on one address (the one users' containers reach the hub on).

    python ngshare_service.py --database sqlite:////srv/hub/state/ngshare.sqlite \
        --storage /srv/hub/state/ngshare-files --admins hubctl
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import namedtuple
from urllib.parse import urlparse


def join_the_parents_session() -> None:
    """ngshare 0.6 with SQLAlchemy 2: `Assignment(name, course)` and `Submission(student,
    assignment)` set their parent through a backref, which SQLAlchemy 1.x cascaded into the
    parent's session and 2.x no longer does (the `cascade_backrefs` removal): the release or
    submission was answered with success and never stored. Each new one joins its parent's
    session here, as it did under SQLAlchemy 1.4."""
    from ngshare.database import Assignment, Submission
    from sqlalchemy.orm import object_session

    for cls, parent in ((Assignment, "course"), (Submission, "assignment")):
        def init(self, *args, _original=cls.__init__, _parent=parent, **kwargs):
            _original(self, *args, **kwargs)
            session = object_session(getattr(self, _parent))
            if session is not None:
                session.add(self)
        cls.__init__ = init


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="ngshare's database URL")
    parser.add_argument("--storage", required=True, help="where ngshare keeps the files")
    parser.add_argument("--admins", default="", help="comma-separated hub names that manage "
                        "courses (the roster service)")
    args = parser.parse_args(argv)

    import logging

    from ngshare import dbutil
    from ngshare.ngshare import MyApplication
    from tornado.httpserver import HTTPServer
    from tornado.ioloop import IOLoop

    logging.basicConfig(level=logging.INFO, format="[%(levelname)1.1s %(asctime)s ngshare] "
                        "%(message)s")
    join_the_parents_session()
    options = namedtuple("CmdOpts", ["x"])(["data=true", f"storage={args.storage}"])
    dbutil.upgrade(args.database, cmd_opts=options)  # as ngshare's main does
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    app = MyApplication(prefix, args.database, args.storage,
                        admin=[name for name in args.admins.split(",") if name],
                        autoreload=False)
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    HTTPServer(app, max_body_size=200 * 1024 * 1024).listen(url.port, url.hostname)
    logging.info("ngshare at %s%s", os.environ["JUPYTERHUB_SERVICE_URL"].rstrip("/"), prefix)
    IOLoop.current().start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
