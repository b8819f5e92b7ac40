"""Grades back to the LMS's line item through LTI Assignment and Grade Services (AGS).

One score per student from the one gradebook (`grader.results.lms_export.final_score`: late
penalties and manual grades included), to `<line item>/scores` as
`application/vnd.ims.lis.v1.score+json`,
with a bearer token from the platform's OAuth2 token endpoint (client credentials, a JWT client
assertion signed by the tool's key: RFC 7523). The LMS knows a student by their LTI `sub`:
`lti-users.json` (course user name -> sub) is written by the hub's launches, and a TA may give a
CSV instead. The line item is lti.json's `lineitem_url`, or else the one the launches named
(`lti-links.json`, their AGS claim). What was last sent per student is kept in
`passback-sent.json`, so a second run sends only what changed. All three files lie beside
lti.json (the hub's state/), so `make passback` against the hub's lti.json and the hub's grades
page read and keep the same records.
"""

from __future__ import annotations

import csv
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jwt

from mlmcourse.grader.results.lms_export import final_score
from mlmcourse.lms.keys import KEY_ID, load_private
from mlmcourse.lms.launch import LINKS_FILE, write_private
from mlmcourse.lms.settings import PASSBACK_FIELDS, LtiSettingsError, read_lti_settings

AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class PassbackError(Exception):
    """Something that stops the whole run (a bad lti.json, a refused token)."""


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    deployment_id: str
    token_url: str
    key_folder: Path
    lineitem_url: str = ""  # lti.json's; "" (the usual): the one the launches named
    launches: Path | None = None  # lti-links.json: each link's line item, as its launches said

    @classmethod
    def load(cls, path: Path) -> Platform:
        try:
            values = read_lti_settings(path, PASSBACK_FIELDS)
        except LtiSettingsError as err:
            raise PassbackError(str(err)) from err
        folder = Path(values["key_folder"]).expanduser()
        if not folder.is_absolute():
            folder = path.parent / folder
        return cls(**{n: str(values[n]) for n in PASSBACK_FIELDS if n != "key_folder"},
                   key_folder=folder,
                   lineitem_url=str(values.get("lineitem_url") or ""),
                   launches=path.parent / LINKS_FILE)

    def line_item(self) -> str:
        """Where the scores go: lti.json's lineitem_url, else the line item the launches named;
        asked when sending (a hub's first launches come after its start)."""
        return self.lineitem_url or line_item_of_launches(self.launches)


def scores_url(line_item: str) -> str:
    """AGS: the scores service is the line item's URL + /scores (before any query)."""
    base, _, query = line_item.partition("?")
    return f"{base.rstrip('/')}/scores" + (f"?{query}" if query else "")


NO_LINE_ITEM = ("no line item yet: open the assignment once from the LMS (its launch names the "
                "gradebook column: the AGS claim's lineitem), or set lineitem_url in lti.json")


def line_item_of_launches(path: Path | None) -> str:
    """The one line item the launches named (lti-links.json, per resource link). Links that
    name different line items: the course has one assignment, so lti.json must say which; links
    with no line item: the LMS's link is no graded assignment."""
    try:
        links = json.loads(path.read_text()) if path and path.exists() else {}
    except ValueError as err:
        raise PassbackError(f"{path} is not valid JSON: {err}") from err
    entries = {link: entry for link, entry in sorted(links.items()) if isinstance(entry, dict)}
    named = {entry["lineitem"]: f"{link} {entry.get('title', '')}".strip()
             for link, entry in entries.items() if entry.get("lineitem")}
    if len(named) > 1:
        raise PassbackError("the LMS's links of this tool name several line items: set "
                            "lineitem_url in lti.json to the assignment's one of: " + "; ".join(
                                f"{url} (link {link})" for url, link in named.items()))
    if not named and entries:
        raise PassbackError("the LMS's link of this tool has no gradebook column (its launches "
                            "name no line item): make it a graded assignment (Canvas: an "
                            "External Tool assignment with points; Moodle: the activity with a "
                            "maximum grade, accepting grades from the tool)")
    if not named:
        raise PassbackError(NO_LINE_ITEM)
    return next(iter(named))


def sent_record(settings: Path) -> Path:
    """What was sent, per line item and student: beside lti.json (one record for the hub's
    grades page and a command-line passback with the hub's lti.json)."""
    return settings.parent / "passback-sent.json"


@dataclass(frozen=True)
class Score:
    student: str
    given: float
    maximum: float
    not_yet: str = ""  # why this score is not final yet (then it is not sent)
    penalty: float = 0.0  # the late penalty already taken off `given`


def read_scores(db_url: str, assignment: str, submitted: Path | None = None) -> list[Score]:
    """Every student of the gradebook, with their score after the late penalty (0 for nothing
    handed in: the LMS then shows a 0, as grades-lms.csv does). A score is not final while its
    submission waits for manual grading, or was collected (`submitted`: the course's
    submitted/ folder) and not autograded yet: the gradebook has no score for it then."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        maximum = float(gradebook.find_assignment(assignment).max_score)
        scores = []
        for student in gradebook.students:
            collected = collected_at(submitted, student.id, assignment)
            try:
                graded = gradebook.find_submission(assignment, student.id)
            except MissingEntry:
                graded = None
                not_yet = "collected, not autograded yet" if collected else ""
            else:
                not_yet = ("collected again, not autograded yet"
                           if collected and graded.timestamp and collected > graded.timestamp
                           else "waits for manual grading" if graded.needs_manual_grade else "")
            penalty = (float(graded.late_submission_penalty or 0)
                       if graded is not None and not not_yet else 0.0)
            scores.append(Score(student.id, final_score(gradebook, assignment, student.id),
                                maximum, not_yet, penalty))
        return scores


def collected_at(submitted: Path | None, student: str, assignment: str) -> datetime | None:
    """When the collected submission was handed in (nbgrader's timestamp.txt, UTC), or None
    when nothing of the student's is collected; a folder without a timestamp is 'collected'
    with the earliest time."""
    from nbgrader.utils import parse_utc

    if submitted is None or not (submitted / student / assignment).is_dir():
        return None
    stamp = submitted / student / assignment / "timestamp.txt"
    try:
        return parse_utc(stamp.read_text().strip()).replace(tzinfo=None)
    except (OSError, ValueError):
        return datetime.min


def read_lti_ids(path: Path) -> dict[str, str]:
    """course user name -> LTI sub, from the launches' JSON or a TA's CSV (user,sub)."""
    if not path.exists():
        return {}
    if path.suffix == ".csv":
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
        if rows and not {"user", "sub"} <= set(rows[0]):
            raise PassbackError(f"{path} needs the columns user,sub")
        return {row["user"].strip(): row["sub"].strip() for row in rows if row["sub"].strip()}
    try:
        entries = json.loads(path.read_text())
    except ValueError as err:
        raise PassbackError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(entries, dict):
        raise PassbackError(f"{path} must hold one JSON object: user name -> its launch")
    ids = {user: entry.get("sub") if isinstance(entry, dict) else entry
           for user, entry in entries.items()}
    wrong = sorted(user for user, sub in ids.items() if not isinstance(sub, str) or not sub)
    if wrong:
        raise PassbackError(f"{path}: no sub for {', '.join(wrong)}")
    return ids


def read_names(path: Path) -> dict[str, str]:
    """course user name -> the name the LMS gave (lti-users.json), for the lines a TA reads."""
    if path.suffix != ".json" or not path.exists():
        return {}
    entries = json.loads(path.read_text())
    return {user: entry["name"] for user, entry in entries.items()
            if isinstance(entry, dict) and entry.get("name")}


def read_staff(path: Path) -> set[str]:
    """The users whose last launch was as staff (lti-users.json): a gradebook row left from an
    earlier launch as a Learner gets no score in the LMS."""
    if path.suffix != ".json" or not path.exists():
        return set()
    entries = json.loads(path.read_text())
    return {user for user, entry in entries.items()
            if isinstance(entry, dict) and entry.get("staff")}


def client_assertion(platform: Platform, now: float | None = None) -> str:
    """RFC 7523: iss = sub = client_id, aud = the token endpoint, a fresh jti, 5 minutes."""
    now = time.time() if now is None else now
    claims = {"iss": platform.client_id, "sub": platform.client_id, "aud": platform.token_url,
              "iat": int(now), "exp": int(now) + 300, "jti": uuid.uuid4().hex}
    return jwt.encode(claims, load_private(platform.key_folder), algorithm="RS256",
                      headers={"kid": KEY_ID})


def access_token(platform: Platform) -> str:
    body = urllib.parse.urlencode({
        "grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": client_assertion(platform), "scope": AGS_SCORE_SCOPE}).encode()
    request = urllib.request.Request(platform.token_url, data=body, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["access_token"]
    except urllib.error.HTTPError as err:
        raise PassbackError(f"the LMS refused the token request ({platform.token_url}): "
                            f"HTTP {err.code} {err.read()[:300].decode(errors='replace')}") from err
    except (urllib.error.URLError, ValueError, KeyError) as err:
        raise PassbackError(f"no token from {platform.token_url}: {err}") from err


def score_body(score: Score, sub: str, moment: datetime) -> dict:
    return {"userId": sub, "scoreGiven": score.given, "scoreMaximum": score.maximum,
            "activityProgress": "Completed", "gradingProgress": "FullyGraded",
            "timestamp": moment.astimezone(UTC).isoformat(timespec="seconds")}


def post_score(url: str, token: str, body: dict) -> None:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": SCORE_TYPE,
                                                             "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30):
        pass


@dataclass
class Outcome:
    lines: list[str]
    failed: list[str]


def passback(platform: Platform, scores: list[Score], lti_ids: dict[str, str], sent_file: Path,
             dry_run: bool = False, staff: set[str] = frozenset(),
             names: dict[str, str] | None = None) -> Outcome:
    """Send what changed since the last run; one line per student (by the name the LMS gave,
    where known); the others go on after a student fails. A score that is not final yet, or a
    user who is staff now, is not sent."""
    try:
        sent = json.loads(sent_file.read_text()) if sent_file.exists() else {}
    except ValueError as err:
        raise PassbackError(f"{sent_file} is not valid JSON: {err}") from err
    if not isinstance(sent, dict):
        raise PassbackError(f"{sent_file} must hold one JSON object (what was sent before)")
    key = platform.line_item()
    last = sent.get(key, {})
    outcome, token = Outcome([], []), None
    for score in scores:
        name = (names or {}).get(score.student)
        who = f"{name} ({score.student})" if name and name != score.student else score.student
        if score.student in staff:
            outcome.lines.append(f"{who}: staff in the LMS now, not sent")
            continue
        if score.not_yet:
            outcome.lines.append(f"{who}: {score.not_yet}, not sent")
            continue
        sub = lti_ids.get(score.student)
        if not sub:
            outcome.failed.append(score.student)
            outcome.lines.append(f"{who}: FAILED, no LTI id (the student never "
                                 "launched from the LMS and is not in the CSV)")
            continue
        late = (f", {score.given + score.penalty:g} less a late penalty of {score.penalty:g}"
                if score.penalty else "")
        shown = f"{who}: {score.given:g} / {score.maximum:g} (LTI {sub}{late})"
        if last.get(score.student) == [sub, score.given, score.maximum]:
            outcome.lines.append(f"{shown}: unchanged, not sent")
            continue
        if dry_run:
            outcome.lines.append(f"{shown}: would send")
            continue
        token = token or access_token(platform)
        try:
            post_score(scores_url(key), token, score_body(score, sub, datetime.now(UTC)))
        except (urllib.error.URLError, OSError) as err:
            outcome.failed.append(score.student)
            outcome.lines.append(f"{who}: FAILED, {describe(err)}")
            continue
        last[score.student] = [sub, score.given, score.maximum]
        outcome.lines.append(f"{shown}: sent")
    if not dry_run:
        sent[key] = last
        write_private(sent_file, sent)  # (LTI ids and scores: the owner's only)
    return outcome


def describe(err: Exception) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"the LMS answered HTTP {err.code} {err.reason}"
    return f"could not reach the LMS: {err}"
