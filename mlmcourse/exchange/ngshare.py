"""nbgrader's exchange through ngshare, a JupyterHub service: no shared disk, no Unix identities.

The file-system exchange (nbgrader's default) needs one folder every server can write and Unix
owners to tell students apart (nbgrader #978, #1097: a student can read or forge another's
submission where modes slip). On a hub of containers there is no such folder. ngshare keeps the
course's releases, submissions and feedback in its own database and knows who calls from the
hub: each request carries the caller's JupyterHub token (the server's JUPYTERHUB_API_TOKEN),
ngshare asks the hub whose it is, and a student may fetch the released assignment, submit as
themselves, list and fetch their own submissions' feedback, nothing else. Which course a user
teaches or takes is set by the hub's roster (deploy/hub/ngshare_roster.py), not by the user.

`ngshare-exchange` 0.5.3 (ngshare's own nbgrader plugin) pins jupyter-core<4.11.2, against the
course's jupyter_core 5.9.1; these classes implement nbgrader 0.9's exchange (nbgrader.exchange
.abc) against ngshare's REST API instead, reusing nbgrader's own file-system classes for what
happens on the user's disk (which files are copied, the submission cache, the Assignment List's
records). Configure (roles' nbgrader_config.py): ``c.ExchangeFactory.<kind> = "mlmcourse.
exchange.ngshare.<Class>"`` for each kind, and the service's address in MLMCOURSE_NGSHARE_URL.

Timestamps are the server's: a submission's time is the moment ngshare stored it (a student
cannot write their own timestamp.txt), and collect writes it into the course's submitted/.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

import requests
from nbgrader.exchange.abc import Exchange as AbstractExchange
from nbgrader.exchange.abc import ExchangeFetchFeedback as AbstractFetchFeedback
from nbgrader.exchange.abc import ExchangeReleaseAssignment as AbstractReleaseAssignment
from nbgrader.exchange.abc import ExchangeReleaseFeedback as AbstractReleaseFeedback
from nbgrader.exchange.default import ExchangeCollect as DiskCollect
from nbgrader.exchange.default import ExchangeFetchAssignment as DiskFetchAssignment
from nbgrader.exchange.default import ExchangeList as DiskList
from nbgrader.exchange.default import ExchangeSubmit as DiskSubmit
from traitlets import Bool, Unicode, default

URL_VARIABLE = "MLMCOURSE_NGSHARE_URL"
TIMEOUT_S = 120
ZONE = " UTC"


class NgshareError(RuntimeError):
    """ngshare refused or could not be reached; the message says which and why."""


def nbgrader_time(server_time: str) -> str:
    """ngshare's '2026-12-01 15:40:00.123456' (with or without ' UTC') as nbgrader writes it."""
    return server_time.strip().removesuffix(ZONE) + ZONE


def server_time(nbgrader_timestamp: str) -> str:
    return nbgrader_timestamp.strip().removesuffix(ZONE)


def pack(folder: Path) -> list[dict]:
    """Every file under `folder` as ngshare takes it: a relative path and base64 content."""
    return [{"path": path.relative_to(folder).as_posix(),
             "content": base64.b64encode(path.read_bytes()).decode()}
            for path in sorted(folder.rglob("*")) if path.is_file()]


def unpack(files: list[dict], folder: Path) -> list[Path]:
    """ngshare's files written under `folder`; a path that would leave it is refused."""
    written = []
    for entry in files:
        relative = PurePosixPath(entry["path"])
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise NgshareError(f"ngshare sent a file with an unsafe path: {entry['path']!r}")
        target = folder.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(entry["content"]))
        written.append(target)
    return written


class NgshareClient:
    """Calls to ngshare as the user whose token this server holds."""

    def __init__(self, url: str, token: str):
        if not url:
            raise NgshareError(f"no ngshare address: the hub sets {URL_VARIABLE} in users' "
                               "servers (is this server started by the course's hub?)")
        if not token:
            raise NgshareError("no JupyterHub token (JUPYTERHUB_API_TOKEN): the exchange "
                               "works in a server the hub started")
        self.url = url.rstrip("/") + "/"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {token}"

    def call(self, method: str, path: str, params: dict | None = None,
             data: dict | None = None) -> dict:
        try:
            response = self.session.request(method, self.url + path, params=params, data=data,
                                             timeout=TIMEOUT_S, allow_redirects=False)
        except requests.RequestException as err:
            raise NgshareError(f"ngshare at {self.url} cannot be reached: {err}") from None
        try:
            body = response.json()
        except ValueError:
            body = {"success": False, "message": f"HTTP {response.status_code}"}
        if response.status_code >= 300 or not body.get("success"):
            raise NgshareError(f"ngshare: {body.get('message', 'refused')} "
                               f"({method} {path}, HTTP {response.status_code})")
        return body


class NgshareExchange(AbstractExchange):
    """What every class here shares: the service's address, the caller's token, the course."""

    ngshare_url = Unicode(help=f"ngshare's address (default: ${URL_VARIABLE})").tag(config=True)
    path_includes_course = Bool(False, help="as nbgrader's: ./<course>/<assignment> when "
                                "True, else ./<assignment>").tag(config=True)

    @default("ngshare_url")
    def _url_default(self) -> str:
        return os.environ.get(URL_VARIABLE, "")

    @property
    def ngshare(self) -> NgshareClient:
        if not hasattr(self, "_client"):
            try:
                self._client = NgshareClient(self.ngshare_url,
                                             os.environ.get("JUPYTERHUB_API_TOKEN", ""))
            except NgshareError as err:
                self.fail(str(err))
        return self._client

    def api(self, method: str, path: str, **options) -> dict:
        try:
            return self.ngshare.call(method, path, **options)
        except NgshareError as err:
            self.fail(str(err))

    @property
    def course(self) -> str:
        if not self.coursedir.course_id:
            self.fail("No course id specified. Re-run with --course flag.")
        return self.coursedir.course_id

    def ensure_root(self) -> None:
        """(nbgrader's file-system classes check their shared folder here: there is none)"""

    def me(self) -> str:
        """Who this server's user is, as the hub says (not the Unix user: `jovyan` in every
        container)."""
        return os.environ.get("JUPYTERHUB_USER") or os.environ.get("USER", "")

    def released_names(self, assignment: str) -> list[str]:
        """The released assignment's files (names only)."""
        body = self.api("GET", f"assignment/{self.course}/{assignment}",
                        params={"list_only": "true"})
        return [entry["path"] for entry in body["files"]]

    def staging(self) -> Path:
        """A private folder for this run's copies (removed when the process ends)."""
        if not hasattr(self, "_staging"):
            self._staging = tempfile.TemporaryDirectory(prefix="mlmcourse-exchange-")
        return Path(self._staging.name)


def placeholders(folder: Path, names: list[str]) -> Path:
    """Empty files with the released names: what nbgrader's own checks compare a submission
    with (missing or extra notebooks), without downloading the release again."""
    for name in names:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    return folder


# ---------------------------------------------------------------------------------------------
# The instructor's side: release, collect, release feedback.

class ReleaseAssignment(NgshareExchange, AbstractReleaseAssignment):
    """The course's release/<assignment>/ to ngshare (`--force` replaces a released one)."""

    def init_src(self):
        self.src_path = Path(self.coursedir.format_path(
            self.coursedir.release_directory, ".", self.coursedir.assignment_id))
        if not self.src_path.is_dir():
            self.fail(f"Assignment not found: {self.src_path} (generate it first)")

    def init_dest(self):
        self.dest = f"assignment/{self.course}/{self.coursedir.assignment_id}"

    def copy_files(self):
        files = pack(self.src_path)
        if not files:
            self.fail(f"{self.src_path} holds no files to release")
        released = self.coursedir.assignment_id in self.api(
            "GET", f"assignments/{self.course}")["assignments"]
        if released:
            if not self.force:
                self.fail(f"Assignment {self.coursedir.assignment_id!r} is already released; "
                          "use --force to replace it")
            self.api("DELETE", self.dest)
        self.api("POST", self.dest, data={"files": json.dumps(files)})
        self.log.info("Released %s (%d files) to ngshare", self.coursedir.assignment_id,
                      len(files))


class Collect(NgshareExchange, DiskCollect):
    """Each student's latest submission (or the last before the due date, with
    --before-duedate) from ngshare into the course's submitted/, with the server's timestamp;
    nbgrader's own collect decides what to copy or update."""

    def init_src(self):
        assignment = self.coursedir.assignment_id
        listing = self.api("GET", f"submissions/{self.course}/{assignment}")["submissions"]
        wanted = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        self.root = str(self.staging())
        inbound = self.staging() / self.course / "inbound"
        inbound.mkdir(parents=True, exist_ok=True)
        for entry in listing:
            if wanted is None or entry["student_id"] == wanted:
                name = f"{entry['student_id']}+{assignment}+{nbgrader_time(entry['timestamp'])}"
                (inbound / name).mkdir(exist_ok=True)
        self.check_owner = False  # every file here is the instructor's copy: ngshare vouches
        super().init_src()  # one record per student, chosen as nbgrader chooses
        for record in self.src_records:
            self._download(record["filename"])

    def copy_files(self):
        super().copy_files()
        self.learn_names()

    def learn_names(self) -> None:
        """The gradebook learns each collected student's name and e-mail from the course's
        roster in ngshare (what the hub's roster or the student's launch from the LMS put
        there), so the formgrader and the exports show them. Written here, by the staff who
        own the gradebook; an empty field in ngshare leaves the gradebook's as it is."""
        from nbgrader.api import Gradebook

        collected = {record["username"] for record in self.src_records}
        people = self.api("GET", f"students/{self.course}")["students"]
        with Gradebook(self.coursedir.db_url, self.course) as gradebook:
            for person in people:
                if person["username"] not in collected:
                    continue
                known = {field: person.get(field) for field in
                         ("first_name", "last_name", "email") if person.get(field)}
                gradebook.update_or_create_student(person["username"], **known)

    def _download(self, folder_name: str) -> None:
        student, assignment, stamp = folder_name.split("+", 2)
        body = self.api("GET", f"submission/{self.course}/{assignment}/{student}",
                        params={"timestamp": server_time(stamp)})
        folder = Path(self.inbound_path, folder_name)
        unpack(body["files"], folder)
        (folder / "timestamp.txt").write_text(nbgrader_time(body["timestamp"]))


class ReleaseFeedback(NgshareExchange, AbstractReleaseFeedback):
    """The course's feedback/<student>/<assignment>/*.html to ngshare, attached to the
    submission it grades (its timestamp.txt, the server's time of that submission)."""

    def init_src(self):
        student = self.coursedir.student_id if self.coursedir.student_id else "*"
        self.folders = sorted(glob.glob(self.coursedir.format_path(
            self.coursedir.feedback_directory, student, self.coursedir.assignment_id)))

    def init_dest(self):
        self.course  # noqa: B018  (fails early without a course id)

    def copy_files(self):
        excluded = set(filter(None, (self.coursedir.student_id_exclude or "").split(",")))
        for folder in map(Path, self.folders):
            student = folder.parent.name
            if student in excluded or not list(folder.glob("*.html")):
                continue
            stamp = (folder / "timestamp.txt").read_text()
            files = [entry for entry in pack(folder) if entry["path"].endswith(".html")]
            self.api("POST", f"feedback/{self.course}/{self.coursedir.assignment_id}/{student}",
                     data={"timestamp": server_time(stamp), "files": json.dumps(files)})
            self.log.info("Released feedback for %s on %s (%s)", student,
                          self.coursedir.assignment_id, stamp.strip())


# ---------------------------------------------------------------------------------------------
# The student's side: fetch, submit, fetch feedback; and the Assignment List's records.

class FetchAssignment(NgshareExchange, DiskFetchAssignment):
    """The released assignment from ngshare into the student's folder (nbgrader's own rules:
    an existing folder is kept; --replace restores only missing files)."""

    def init_src(self):
        assignment = self.coursedir.assignment_id
        body = self.api("GET", f"assignment/{self.course}/{assignment}")
        self.src_path = str(self.staging() / assignment)
        unpack(body["files"], Path(self.src_path))


class Submit(NgshareExchange, DiskSubmit):
    """The student's folder to ngshare as this hub user, then a copy in the local submission
    cache (what the Assignment List shows), named with the server's timestamp."""

    def init_dest(self):
        self.course  # noqa: B018
        self.cache_path = os.path.join(self.cache, self.course)

    def init_release(self):
        names = self.released_names(self.coursedir.assignment_id)
        self.release_path = str(placeholders(self.staging() / "released", names))

    def copy_files(self):
        self.init_release()
        self.check_filename_diff()
        outgoing = self.staging() / "outgoing"
        self.do_copy(self.src_path, str(outgoing))  # nbgrader's ignore, include and size rules
        files = pack(outgoing)
        body = self.api("POST", f"submission/{self.course}/{self.coursedir.assignment_id}",
                        data={"files": json.dumps(files)})
        stamp = nbgrader_time(body["timestamp"])
        cached = Path(self.cache_path) / f"{self.me()}+{self.coursedir.assignment_id}+{stamp}"
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(outgoing, cached)
        (cached / "timestamp.txt").write_text(stamp)
        self.timestamp = stamp
        self.log.info("Submitted as: %s %s %s", self.course, self.coursedir.assignment_id, stamp)


class FetchFeedback(NgshareExchange, AbstractFetchFeedback):
    """Feedback on each of the student's own submissions into <assignment>/feedback/<time>/."""

    def init_src(self):
        self.assignment = self.coursedir.assignment_id

    def init_dest(self):
        root = (os.path.join(self.course, self.assignment) if self.path_includes_course
                else self.assignment)
        self.dest_path = Path(self.assignment_dir, root, "feedback")

    def copy_files(self):
        path = f"submissions/{self.course}/{self.assignment}/{self.me()}"
        for entry in self.api("GET", path)["submissions"]:
            body = self.api("GET", f"feedback/{self.course}/{self.assignment}/{self.me()}",
                            params={"timestamp": entry["timestamp"]})
            if body["files"]:
                folder = self.dest_path / nbgrader_time(entry["timestamp"])
                unpack(body["files"], folder)
                self.log.info("Fetched feedback: %s", folder)


class List(NgshareExchange, DiskList):
    """What the Assignment List shows: released assignments (from ngshare), the student's own
    submissions (the local cache, as nbgrader keeps it) with whether feedback waits in ngshare;
    for staff, --inbound lists the class's submissions."""

    def init_dest(self):
        course = self.course
        staging = self.staging()
        if self.cached:
            self.assignments = sorted(glob.glob(os.path.join(
                self.cache, course, f"*+{self.coursedir.assignment_id or '*'}+*")))
            return
        self.root = str(staging)
        wanted = [self.coursedir.assignment_id] if self.coursedir.assignment_id else self.api(
            "GET", f"assignments/{course}")["assignments"]
        if self.inbound:
            self._stage_inbound(course, wanted)
            pattern = os.path.join(self.root, course, "inbound", "*")
        else:
            for assignment in wanted:
                placeholders(staging / course / "outbound" / assignment,
                             self.released_names(assignment))
            pattern = os.path.join(self.root, course, "outbound", "*")
        self.assignments = sorted(glob.glob(pattern))

    def _stage_inbound(self, course: str, assignments: list[str]) -> None:
        for assignment in assignments:
            for entry in self.api("GET", f"submissions/{course}/{assignment}")["submissions"]:
                name = f"{entry['student_id']}+{assignment}+{nbgrader_time(entry['timestamp'])}"
                (self.staging() / course / "inbound" / name).mkdir(parents=True, exist_ok=True)

    def parse_assignments(self):
        assignments = super().parse_assignments()
        if self.cached:
            for group in assignments:
                for info in group["submissions"]:
                    self._feedback_state(info)
        return assignments

    def _feedback_state(self, info: dict) -> None:
        """Whether ngshare holds feedback on this submission, and whether it differs from the
        copy fetched already (nbgrader's default looks for it in the shared folder)."""
        try:
            body = self.ngshare.call(
                "GET", f"feedback/{info['course_id']}/{info['assignment_id']}/{self.me()}",
                params={"timestamp": server_time(info["timestamp"]), "list_only": "true"})
            remote = {Path(e["path"]).stem: e["checksum"] for e in body["files"]}
        except NgshareError:
            remote = {}
        for nb in info["notebooks"]:
            nb["has_exchange_feedback"] = nb["notebook_id"] in remote
            local = nb.get("local_feedback_path")
            if nb["has_local_feedback"] and nb["has_exchange_feedback"] and local:
                mine = hashlib.md5(Path(local).read_bytes()).hexdigest()  # noqa: S324 (ngshare's)
                nb["feedback_updated"] = mine != remote[nb["notebook_id"]]
        notebooks = info["notebooks"]
        info["has_exchange_feedback"] = bool(notebooks) and all(
            nb["has_exchange_feedback"] for nb in notebooks)
        info["feedback_updated"] = any(nb["feedback_updated"] for nb in notebooks)

    def remove_files(self):
        if self.inbound:
            self.fail("Submissions stay in ngshare; nothing is removed from the inbound list")
        assignments = self.parse_assignments()
        if self.cached:
            for path in self.assignments:
                shutil.rmtree(path)
            return assignments
        for info in assignments:
            self.api("DELETE", f"assignment/{info['course_id']}/{info['assignment_id']}")
            self.log.info("Removed the release of %s", info["assignment_id"])
        return assignments


EXCHANGE_CLASSES = {
    "release_assignment": ReleaseAssignment, "collect": Collect,
    "release_feedback": ReleaseFeedback, "fetch_assignment": FetchAssignment,
    "submit": Submit, "fetch_feedback": FetchFeedback, "list": List,
}


def configure(config) -> None:
    """Point nbgrader's ExchangeFactory at these classes (a roles' nbgrader_config.py calls
    this when the hub says the exchange is ngshare)."""
    for kind, cls in EXCHANGE_CLASSES.items():
        config.ExchangeFactory[kind] = f"{cls.__module__}.{cls.__qualname__}"
