"""The course's LTI tool on the hub, as a JupyterHub service run by the hub as root (it alone
reads the tool's private key, in the hub's state/):

- `/services/lms/jwks.json`, for anyone: the tool's public key, the URL the LMS registers;
- `/services/lms/`, for the course's staff only (the hub's login, the scope
  access:services!service=lms given to the staff group): what `make passback` would send for
  the assignment (a dry run), and a button that sends it. The hub's Services menu links it.

Grades are sent as `python -m mlmcourse passback` sends them (mlmcourse/lms/passback.py), from
the course folder's gradebook, with the LTI ids the launches recorded.

    python lti_service.py --hub /srv/mlmcourse-hub   (the hub starts it; README "LTI 1.3")
"""

from __future__ import annotations

import argparse
import asyncio
import html
import logging
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

SETTINGS = "state/lti.json"  # (lti_auth.SETTINGS: the hub's lti.json, beside its records)


def run_passback(hub: Path, dry_run: bool):
    """The passback's lines and failures, or the reason it could not run at all."""
    from sqlalchemy.exc import SQLAlchemyError

    from mlmcourse.course.layout import only_assignment
    from mlmcourse.lms.keys import KeyFolderError
    from mlmcourse.lms.launch import USERS_FILE
    from mlmcourse.lms.passback import (
        PassbackError,
        Platform,
        passback,
        read_lti_ids,
        read_names,
        read_scores,
        read_staff,
        sent_record,
    )

    settings = hub / SETTINGS
    users = settings.parent / USERS_FILE  # (the launches' record, beside lti.json)
    try:
        with private_copy(hub / "course" / "gradebook.db", hub / "state") as gradebook:
            platform = Platform.load(settings)
            ids = read_lti_ids(users)
            # lti.json names one line item: the course's one assignment (several: an error)
            scores = read_scores(f"sqlite:///{gradebook}", only_assignment(hub / "course"),
                                 hub / "course" / "submitted")
            return passback(platform, scores, ids, sent_record(settings), dry_run,
                            staff=read_staff(users), names=read_names(users))
    except (PassbackError, KeyFolderError, OSError, ValueError) as err:
        return str(err)
    except SQLAlchemyError as err:
        return f"the course's gradebook cannot be read: {type(err).__name__}"


@contextmanager
def private_copy(gradebook: Path, folder: Path):
    """The staff's gradebook, read by root as a copy in the hub's own state/: opened without
    following a link (the course folder is the staff's to write), never written."""
    try:
        descriptor = os.open(gradebook, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise OSError(f"{gradebook} cannot be read as a plain file ({err.strerror}): "
                      "autograde first, in the formgrader") from None
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        copy = Path(scratch) / "gradebook.db"
        with os.fdopen(descriptor, "rb") as source, copy.open("wb") as target:
            shutil.copyfileobj(source, target)
        yield copy


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ font: 16px/1.5 system-ui, sans-serif; margin: 2rem; color: #1a1a1a; }}
button {{ font-size: 1rem; padding: .5rem 1rem; }}
.failed {{ color: #a00000; font-weight: bold; }}</style></head>
<body><main><h1>{title}</h1>
<p>Assignment <code>{assignment}</code>: each student's score after the late penalty and
manual grades, to the LMS's line item. Only a score that changed since the last sending
goes. The formgrader shows points before the late penalty: a line says when the penalty
took some (under the late policy <code>zero</code>, all of them).</p>
<h2>{heading}</h2>
<ul id="passback-lines">{lines}</ul>
{form}
<p><a href="{hub}">Back to the hub</a></p></main></body></html>
"""


def course_assignment(hub: Path) -> str:
    """The assignment the passback sends (the course's only one), or why there is none."""
    from mlmcourse.course.layout import only_assignment

    try:
        return only_assignment(hub / "course")
    except ValueError as err:
        return str(err)


def page(handler, outcome, sent: bool, assignment: str = "") -> str:
    if isinstance(outcome, str):
        lines = f'<li class="failed">Passback cannot run: {html.escape(outcome)}</li>'
    else:
        lines = "".join(f'<li{" class=failed" if ": FAILED" in line else ""}>'
                        f"{html.escape(line)}</li>" for line in outcome.lines)
    form = (f'<form method="post">{handler.xsrf_form_html()}'
            '<button type="submit">Send grades to the LMS</button></form>')
    return PAGE.format(
        title="Grades to the LMS", assignment=html.escape(assignment),
        lines=lines or "<li>No student</li>",
        heading="Sent" if sent else "What would be sent (nothing is sent yet)", form=form,
        hub=html.escape(os.environ.get("JUPYTERHUB_BASE_URL", "/") + "hub/home"))


def make_app(hub: Path, prefix: str, key_folder: Path):
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
    from tornado import web

    from mlmcourse.lms.keys import JWKS, ensure_keys

    sending = asyncio.Lock()

    class Keys(web.RequestHandler):
        def get(self):
            ensure_keys(key_folder)  # (its JWKS made again from the key if it was deleted)
            self.set_header("Content-Type", "application/json")
            self.write((key_folder / JWKS).read_text())

    class Grades(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        async def get(self):
            self.write(page(self, await asyncio.to_thread(run_passback, hub, True), False,
                            course_assignment(hub)))

        @web.authenticated
        async def post(self):
            async with sending:  # two TAs pressing at once: one sending, then the other
                outcome = await asyncio.to_thread(run_passback, hub, False)
            self.log_sent(outcome)
            self.write(page(self, outcome, True, course_assignment(hub)))

        def log_sent(self, outcome) -> None:
            who = self.current_user["name"]
            lines = [outcome] if isinstance(outcome, str) else outcome.lines
            for line in lines:
                logging.getLogger("lms").info("passback by %s: %s", who, line)

    return web.Application([
        (prefix + "jwks.json", Keys),
        (prefix + "oauth_callback", HubOAuthCallbackHandler),
        (prefix, Grades),
    ], cookie_secret=os.urandom(32), xsrf_cookies=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub", required=True, type=Path, help="the hub folder")
    args = parser.parse_args(argv)

    from tornado.ioloop import IOLoop

    from mlmcourse.lms.keys import ensure_keys
    from mlmcourse.lms.passback import Platform

    logging.basicConfig(level=logging.INFO, format="[%(levelname)1.1s %(asctime)s lms] "
                        "%(message)s")
    key_folder = Platform.load(args.hub / SETTINGS).key_folder
    ensure_keys(key_folder)  # (hubctl.py setup made them, 0600; a key others read stops here)
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    make_app(args.hub, prefix, key_folder).listen(url.port, url.hostname)
    logging.info("the LTI tool at %s%s", os.environ["JUPYTERHUB_SERVICE_URL"], prefix)
    IOLoop.current().start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
