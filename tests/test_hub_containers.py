"""The term on the container hub, in Chromium, with every login a launch from the LMS: the same
hub configuration with containers as its spawner (`hubctl.py setup --spawner containers --auth
lti`), every server a container of the course image (podman), the exchange the ngshare service
(no shared folder), the class whoever a simulated LTI 1.3 platform launches (tests/lms_platform.py).

First, by HTTP against the running hub, a forged, wrong-audience, expired and replayed launch
are refused. Then the instructor launches and releases notebook 01 from the formgrader; three
students (right, wrong, hostile) launch, fetch from the Assignment List, write their answers,
press Validate and submit (the hostile one after the due date); the hostile student then tries,
from a terminal of their own container, to read or fetch another student's submission through
the exchange, to see other homes or the course folder, and gets nothing; a TA launches,
collects and autogrades with the formgrader's buttons (grading in the staff's container, in the
sandbox) and clicks through every formgrader page: exact scores, the names the launches gave,
byte-identical submissions, feedback back to each student (the late one's with its penalty);
the TA sends the grades to the LMS from the hub's Services menu (lti.json names no line item:
the launches' AGS claim does; the page shows the LMS's names and the late penalty), and the
platform's line item holds each score. An account of the host with the image's uid 1000 reads
nothing of the course (the containers run as an id no account holds); `hubctl.py stop` leaves
no container, service, hub or proxy; an account made with the containers' id stops the next
start. Then a class of ten (Unix users' passwords): they log in, fetch, Validate and
submit at the same time; each gets an honest result; the Validate times and each container's
peak memory go to build/hub-class/class.json (`python deploy/container/bench_class.py` runs
this and prints them for the README).

The steps are tests/test_hub.py's (the term on Unix users); skipped with the reason where
podman, mmdebstrap or runc are missing or cannot run, besides what that test needs. The image is
built once and cached (build/image/, keyed by its inputs). Screenshots:
build/hub-containers-shots/.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest
import requests
from conftest import ROOT

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "deploy" / "hub")]
import containers  # noqa: E402
import hubctl  # noqa: E402
import test_hub as steps  # noqa: E402  (the term's steps: log in, fetch, Validate, submit...)

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.slow, pytest.mark.containers]

the_clone_as_it_was = steps.the_clone_as_it_was  # (autouse: set-up closes the repository)
SHOTS = ROOT / "build" / "hub-containers-shots"
CLASS_REPORT = ROOT / "build" / "hub-class" / "class.json"
CLASS_SIZE = 10


def why_not_here() -> str | None:
    return steps.why_not_here() or containers.why_not_here()


@contextlib.contextmanager
def container_hub(prefix: str, students: dict[str, str] | None = None, lms=None):
    """A hub set up with containers as its spawner, the hub running, Chromium; everything
    removed afterwards (containers too). Logins: Unix users' passwords (PAM, as on one
    machine), or with `lms` (a SimulatedPlatform) launches from the LMS (LTI mode): the class
    is then the platform's people, known to the hub as lti-<sub>."""
    from playwright.sync_api import sync_playwright

    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    hub = Path(tempfile.mkdtemp(prefix="mlmcourse-chub-"))
    os.chmod(hub, 0o755)
    try:
        with steps.class_users(prefix) as (instructor, ta, roles, newcomer, passwords):
            if students:
                passwords.update(extra_students(students))  # (removed in the finally below)
                roles = students
            rows = steps.roster_rows(ta, list(roles.values()))
            roster = steps.write_roster(hub / "roster.csv", rows)
            if lms is None:
                hubctl.setup(hub, instructor, notebooks=[steps.NOTEBOOK],
                             roster=hubctl.read_roster(roster), spawner="containers")
            else:
                setup_from_the_lms(hub, instructor, rows, lms)
            with steps.running_hub(hub) as process, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(steps.lab.CHROMIUM),
                                                     args=steps.lab.CHROMIUM_ARGS, headless=True)
                try:
                    term = steps.Term(process.url, hub, instructor, ta, roles, newcomer,
                                      passwords, rows, browser, process)
                    if lms is not None:
                        term = launched_term(term, lms)
                    yield term
                finally:
                    browser.close()
                    containers.remove_containers(container_of(hub, ""))
    finally:
        if (hub / "course.json").is_file():
            containers.remove_containers(container_of(hub, ""))
            containers.remove_network(hubctl.read_course(hub)["network"])
        for user in (students or {}).values():
            hubctl.remove_user(user)
        shutil.rmtree(hub, ignore_errors=True)


def setup_from_the_lms(hub: Path, instructor: str, rows: list[dict], lms) -> None:
    """LTI mode: lti.json from the platform's registration, without a line item (the launches
    name it), the hub set up with it (the tool's key made), the tool's JWKS registered with the
    platform; the class enrolled in the LMS with the roster's names (the instructor's Unix
    account owns the machine's side only)."""
    settings = lms.lti_json(key_folder="unused")
    del settings["lineitem_url"]  # (the launches name it: their AGS claim)
    (hub / "from-the-lms.json").write_text(json.dumps(settings))
    hubctl.setup(hub, instructor, notebooks=[steps.NOTEBOOK], spawner="containers",
                 auth="lti", lti=hub / "from-the-lms.json")
    lms.tool_jwks = json.loads((hub / hubctl.LTI_KEYS / "jwks.json").read_text())
    lms.enrol(instructor, "Instructor", "Pat", "Prof")
    for row in rows:
        lms.enrol(row["id"], "TeachingAssistant" if row["role"] == "ta" else "Learner",
                  row["first_name"], row["last_name"])


def launched_term(term, lms):
    """The term as the hub knows it in LTI mode: each user lti-<sub>, logging in by launch."""
    from mlmcourse.lms.launch import user_name

    lms.tool_url = term.url
    subs = {user_name(sub): sub for sub in lms.people}
    return dataclasses.replace(
        term, instructor=user_name(term.instructor), ta=user_name(term.ta),
        students={role: user_name(sub) for role, sub in term.students.items()},
        launch=lambda user: f"{lms.url}/launch?sub={subs[user]}")


def extra_students(students: dict[str, str]) -> dict[str, str]:
    passwords = {}
    for user in students.values():
        hubctl.create_user(user)
        passwords[user] = secrets.token_urlsafe(12)
        hubctl.set_password(user, passwords[user])
    return passwords


@pytest.fixture
def shots():
    shutil.rmtree(SHOTS, ignore_errors=True)
    steps.SHOTS_NOW[0] = SHOTS
    yield SHOTS
    steps.SHOTS_NOW[0] = steps.SHOTS


def container_of(hub: Path, user: str) -> str:
    return containers.container_name(hubctl.read_course(hub)["network"], user)


def in_container(hub: Path, user: str, code: str) -> subprocess.CompletedProcess:
    """Python run inside the user's own container, as a terminal of theirs would run it."""
    return subprocess.run(["podman", "exec", container_of(hub, user), "python", "-c", code],
                          capture_output=True, text=True, env=containers.image.podman_env())


PRYING = """
import json, os
from mlmcourse.exchange.ngshare import NgshareClient, NgshareError
client = NgshareClient(os.environ["MLMCOURSE_NGSHARE_URL"], os.environ["JUPYTERHUB_API_TOKEN"])
got = {{}}
for path in ["submission/{course}/{assignment}/{victim}", "submissions/{course}/{assignment}",
             "submissions/{course}/{assignment}/{victim}", "students/{course}"]:
    try:
        got[path] = client.call("GET", path)
    except NgshareError as err:
        got[path] = "refused: " + str(err)
print(json.dumps({{"exchange": got, "homes": sorted(os.listdir("/home")),
                  "course_folder": os.path.exists("/home/jovyan/{course}")}}))
"""


def test_a_whole_term_on_the_container_hub_from_the_lms(shots):
    """The term with every login a launch from the LMS (LTI mode), and grades sent back."""
    from lms_platform import SimulatedPlatform

    with SimulatedPlatform({"keys": []}) as lms, container_hub(
            f"mlc{secrets.token_hex(2)}", lms=lms) as term:
        run_the_term(term, lms)


def run_the_term(term, lms) -> None:
    start = time.monotonic()
    lap = lambda name: term.times.__setitem__(name, time.monotonic() - start)  # noqa: E731
    launches_refused_by_the_hub(term, lms)
    lap("refused launches")
    lti_settings_changed_on_the_running_hub(term)
    late_policy_zero(term)
    students = list(term.students.values())
    launched = time.monotonic()
    pages = {user: steps.begin_log_in(term, user)
             for user in [term.instructor, term.ta, *students]}
    prof = pages[term.instructor]
    steps.wait_for_lab(prof, term.instructor)
    term.times["launch to lab, the first of five at once"] = time.monotonic() - launched
    steps.shoot(prof, "01-instructor-lab")
    lap("instructor's container and lab")
    steps.release(term, steps.formgrader_from_menu(prof, "instructor"))
    lap("released to ngshare")

    work, handed_in = {}, {}
    for role, user in term.students.items():
        page = pages[user]
        steps.wait_for_lab(page, user)
        # the launch lands on the Assignment List (the student's first workspace)
        page.locator("#nbgrader-assignment-list .nbgrader-AssignmentList, "
                     "#nbgrader-assignment-list").first.wait_for()
        assert steps.nbgrader_menu(page) == ["nbgrader:open-assignment-list"]
        steps.fetch(page, role)
        work[user] = steps.write_answer(term, page, user, steps.answer_of(role))
    lap("fetched and answered")
    for user in students:
        steps.press_validate(pages[user])
    for role, user in term.students.items():
        kind, text, seconds = steps.validate_result(pages[user])
        term.times[f"Validate, {role} answer"] = seconds
        steps.shoot(pages[user], f"06-{role}-validate")
        assert kind == steps.VALIDATE_SAYS[role][0], f"{role}: {steps.lab.excerpt(text)}"
        assert steps.VALIDATE_SAYS[role][1] in text, f"{role}: {steps.lab.excerpt(text)}"
        steps.close_dialog(pages[user])
        steps.submit(pages[user], role)
        handed_in[user] = steps.digest(work[user])
        if role == "right":  # the due date passes: the other two hand in late
            due_now(term)
    lap("validated and submitted")

    # The hostile student, in their own container, with their own token: nothing of another.
    hostile, victim = term.students["hostile"], term.students["right"]
    done = in_container(term.hub, hostile, PRYING.format(course=hubctl.COURSE_ID,
                                               assignment=steps.SERIES, victim=victim))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for path, answer in seen["exchange"].items():
        assert isinstance(answer, str) and answer.startswith("refused"), f"{path}: {answer}"
    assert seen["homes"] == ["jovyan"] and not seen["course_folder"], seen
    # ... and a walk of everything their container lets them read: no hidden test, solution,
    # grade or other student's work (tests/student_walk.py, as on the Unix-user hub).
    steps.walk_plan(term, hostile, own=containers.HOME_IN_CONTAINER)
    inside = containers.HOME_IN_CONTAINER
    walked = subprocess.run(
        ["podman", "exec", container_of(term.hub, hostile), "python", f"{inside}/student_walk.py",
         f"{inside}/walk-plan.json", f"{inside}/walk.json"],
        capture_output=True, text=True, env=containers.image.podman_env())
    assert walked.returncode == 0, walked.stderr
    found = json.loads((term.home(hostile) / "walk.json").read_text())
    assert found["walked"] > 2_000 and not found["found"], found

    ta = pages[term.ta]  # a TA grades, in a container of their own with the course folder
    steps.wait_for_lab(ta, term.ta)
    ta_tab = steps.formgrader_from_menu(ta, "ta")
    steps.grade_and_release_feedback(term, ta_tab)
    lap("TA collected, autograded, released feedback")
    shown = steps.walk_the_formgrader(ta_tab, term.roster[1]["last_name"])
    assert f"{term.roster[1]['last_name']}, {term.roster[1]['first_name']}" in shown, shown
    lap("TA walked the formgrader by clicks")
    scores = steps.gradebook_scores(term)
    for role, user in term.students.items():
        assert scores[user] == (steps.expected_points(role), 24), f"{role}: {scores[user]}"
        submitted = term.course / "submitted" / user / steps.SERIES / f"{steps.NOTEBOOK}.ipynb"
        assert steps.digest(submitted) == handed_in[user], f"{role}: the submission changed"
    assert not list(term.hub.rglob("HACKED_BY_*")), "the hostile student wrote somewhere"
    # two handed in after the due date: the late policy takes every point
    late_penalty = {"right": 0, "wrong": steps.expected_points("wrong"),
                    "hostile": steps.expected_points("hostile")}
    expected = {role: steps.expected_points(role) - late_penalty[role] for role in term.students}
    names = {launched_name(row["id"]): f"{row['first_name']} {row['last_name']}"
             for row in term.roster}
    for role, user in term.students.items():
        text = steps.read_feedback(term, pages[user], user, role)
        assert f"Feedback for {names[user]}" in text, text[:500]  # (not the hub name)
        got = expected[role]
        assert f"{got:g} / 24" in text or f"{got:.1f} / 24" in text, f"{role}: {text[:500]}"
        assert ("Late submission penalty" in text) == (late_penalty[role] > 0), text[:500]
    lap("feedback read")
    lines = grades_back_from_the_hub(term, ta, pages[term.students["right"]])
    lap("TA sent the grades back to the LMS")
    # every score is final (no point rests on the student process's report, so the grader marks
    # no submission for a look): the hostile one is sent too, as late (0)
    given = {score["userId"]: score["scoreGiven"] for score in lms.scores}
    assert given == {lms_sub(user): expected[role] for role, user in term.students.items()}, lines
    assert {score["scoreMaximum"] for score in lms.scores} == {24.0}, lms.scores
    late = [line for line in lines if term.students["wrong"] in line]
    assert late and "less a late penalty of" in late[0], lines
    for row in term.roster[1:]:  # the names the LMS gave, beside the hub names
        user = launched_name(row["id"])
        assert any(f"{row['first_name']} {row['last_name']} ({user})" in line
                   for line in lines), lines
    no_host_account_reads_the_course(term)
    lap("a host account with the image's user id read nothing")
    hub_stop_leaves_nothing(term)
    lap("make hub-stop")
    a_colliding_account_stops_the_next_start(term)
    (SHOTS / "times.txt").write_text(
        "".join(f"{name}: {seconds:.1f} s\n" for name, seconds in term.times.items()))


# ---------------------------------------------------------------------------------------------
# From the LMS and back (LTI mode).

CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"


def lms_sub(user: str) -> str:
    return user.removeprefix("lti-")


def launched_name(sub: str) -> str:
    from mlmcourse.lms.launch import user_name

    return user_name(sub)


def lti_settings_changed_on_the_running_hub(term) -> None:
    """`hubctl.py lti FILE` on the running hub: checked, in place, taken at the next launch
    (the launches below come after it)."""
    changed = term.hub / "lti-changed.json"
    changed.write_text((term.hub / "from-the-lms.json").read_text())
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "hub" / "hubctl.py"), "lti",
                           "--hub", str(term.hub), str(changed)], capture_output=True, text=True)
    assert done.returncode == 0 and "takes them at the next launch" in done.stdout, done.stderr


@contextlib.contextmanager
def account_with_id(uid: int):
    """The host's account with this id, or one made for the test (removed afterwards)."""
    try:
        existing = hubctl.pwd.getpwuid(uid).pw_name
    except KeyError:
        existing = None
    if existing:
        yield existing
        return
    name = f"mlmid{secrets.token_hex(2)}"
    subprocess.run(["useradd", "--uid", str(uid), "--no-create-home", name], check=True)
    try:
        yield name
    finally:
        hubctl.remove_user(name)


def no_host_account_reads_the_course(term) -> None:
    """The image's jovyan is 1000, an account of many machines (this one's too): the
    containers run as an id no host account holds, so an account with 1000 reads no solution,
    gradebook or home."""
    uid = containers.user_id(term.hub)
    assert uid != containers.image.UID and not containers.id_holders(uid), uid
    student = term.students["right"]
    private = [term.course / "source" / steps.SERIES / f"{steps.NOTEBOOK}.ipynb",
               term.course / "gradebook.db", term.course / "submitted", term.home(student),
               term.home(student) / steps.SERIES / f"{steps.NOTEBOOK}.ipynb"]
    with account_with_id(containers.image.UID) as name:
        read = [str(path) for path in private if steps.can_read(name, path)]
        assert not read, f"{name} (uid {containers.image.UID}) reads {read}"


def a_colliding_account_stops_the_next_start(term) -> None:
    """An account made since set-up with the containers' id: the next start refuses, naming
    it (it would read every home and the course folder)."""
    uid = containers.user_id(term.hub)
    name = f"mlmid{secrets.token_hex(2)}"
    subprocess.run(["useradd", "--uid", str(uid), "--no-create-home", name], check=True)
    try:
        with pytest.raises(hubctl.HubError, match=f"as id {uid}, which the account {name}"):
            hubctl.start_checks(term.hub)
    finally:
        hubctl.remove_user(name)


def hub_stop_leaves_nothing(term) -> None:
    """`make hub-stop` (hubctl.py stop): every container of the hub, the hub, its services
    (podman's API, ngshare, the LMS tool, the culler) and the proxy end; the hub's API
    answered throughout, though the bridge went with the last container."""
    hub_process = term.process.process
    started = hubctl.descendants(hub_process.pid)
    assert len(started) >= 4, started  # the proxy and the services
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "hub" / "hubctl.py"), "stop",
                           "--hub", str(term.hub)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "did not answer" not in done.stderr, done.stderr
    assert hub_process.poll() is not None and not hubctl.hub_running(term.hub)
    left = [(pid, hubctl.command_line(pid)[:120]) for pid in started if hubctl.command_line(pid)]
    assert not left and not hubctl.services_of(term.hub), left
    names = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True,
                           text=True, env=containers.image.podman_env()).stdout.split()
    assert not [n for n in names if n.startswith(container_of(term.hub, ""))], names


def http_launch(term, lms, sub: str, **token) -> tuple[requests.Response, dict, dict]:
    """A launch by HTTP, as a browser makes it: the hub's login initiation (its state and nonce
    cookies), then an id_token for that nonce posted to its callback. `token`: what the
    platform changes in the id_token (a forged key, another audience, an expiry)."""
    session = requests.Session()
    asked = session.get(lms.login_initiation(sub), allow_redirects=False, timeout=30)
    assert asked.status_code == 302, asked.text[:500]
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(asked.headers["Location"]).query))
    cookies = session.cookies.get_dict()
    role = lms.people[sub]["role"]
    form = {"id_token": lms.launch_token(sub, role, nonce=query["nonce"], **token),
            "state": query["state"]}
    return session.post(lms.redirect_uri, data=form, allow_redirects=False, timeout=30), \
        cookies, form


def launches_refused_by_the_hub(term, lms) -> None:
    """A forged signature, another audience, an expired token, a launch from another LMS
    course of the same deployment and a replayed launch are refused, each with its reason, and
    logged; a good launch is let in."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    sub = lms_sub(term.students["right"])
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for why, token, status, says in (
            ("forged", {"key": other_key}, 400, "Signature verification failed"),
            ("another audience", {"audience": "another-tool"}, 401, "audience"),
            ("expired", {"expires_in": -60}, 400, "expired"),
            ("another course", {CONTEXT: {"id": "sandbox-9", "label": "Mine"}}, 403,
             "not this course")):
        answer, _, _ = http_launch(term, lms, sub, **token)
        assert (answer.status_code, says.lower() in answer.text.lower()) == (status, True), (
            why, answer.status_code, answer.text[-1500:])
    good, cookies, form = http_launch(term, lms, sub)
    assert good.status_code == 302 and "/hub/user-redirect/lab" in good.headers["Location"]
    replayed = requests.post(lms.redirect_uri, data=form, cookies=cookies,
                             allow_redirects=False, timeout=30)
    assert replayed.status_code == 403 and "used already" in replayed.text, replayed.text[-1500:]
    log = (term.hub / "logs" / "jupyterhub.log").read_text()
    assert f"LTI launch of sub '{sub}' refused: this launch was used already" in log


def late_policy_zero(term) -> None:
    """The instructor's late policy (README: nbgrader's own): a late submission earns 0."""
    config = term.course / "nbgrader_config.py"
    config.write_text(config.read_text() + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')


def due_now(term) -> None:
    """The assignment's due date, now (written as the formgrader would, the file's owner kept)."""
    from datetime import UTC, datetime

    from nbgrader.api import Gradebook

    path = term.course / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gradebook:
        gradebook.update_or_create_assignment(
            steps.SERIES, duedate=datetime.now(UTC).replace(tzinfo=None))
    containers.own_for_containers(term.hub, path)


def grades_back_from_the_hub(term, ta, student) -> list[str]:
    """The TA: File > Hub Control Panel, the hub's Services menu, lms: the page shows what
    would be sent; its button sends it. A student is refused the page."""
    with ta.context.expect_page() as opened:
        steps.open_menu_item(ta, "File", "hub:control-panel")
    hub_page = opened.value
    hub_page.get_by_role("button", name="Services").or_(
        hub_page.get_by_role("link", name="Services")).click()
    hub_page.get_by_role("link", name="lms", exact=True).click()
    hub_page.get_by_role("heading", name="Grades to the LMS").wait_for()
    dry_run = hub_page.locator("#passback-lines li").all_inner_texts()
    assert [line.rpartition(": ")[2] for line in dry_run] == [
        "would send", "would send", "would send"], dry_run
    steps.shoot(hub_page, "11-ta-grades-to-the-lms")
    pressed = time.monotonic()
    hub_page.get_by_role("button", name="Send grades to the LMS").click()
    hub_page.get_by_role("heading", name="Sent").wait_for()
    term.times["passback of the class, button to page"] = time.monotonic() - pressed
    sent = hub_page.locator("#passback-lines li").all_inner_texts()
    assert [line.rpartition(": ")[2] for line in sent] == [
        "sent", "sent", "sent"], sent
    steps.shoot(hub_page, "12-ta-grades-sent")
    answer = student.goto(f"{term.url}/services/lms/")
    assert answer.status == 403, f"a student reached the grades page: {answer.status}"
    keys = requests.get(f"{term.url}/services/lms/jwks.json", timeout=30).json()
    assert keys == json.loads((term.hub / hubctl.LTI_KEYS / "jwks.json").read_text())
    return sent


# ---------------------------------------------------------------------------------------------
# Ten students at once.

def peak_memory_bytes(hub: Path, user: str) -> int | None:
    """The container's peak memory (cgroup v1 max_usage, or v2 memory.peak), or None."""
    done = subprocess.run(["podman", "inspect", "--format", "{{.State.CgroupPath}}",
                           container_of(hub, user)], capture_output=True, text=True,
                          env=containers.image.podman_env())
    path = done.stdout.strip()
    for candidate in (f"/sys/fs/cgroup/memory{path}/memory.max_usage_in_bytes",
                      f"/sys/fs/cgroup{path}/memory.peak"):
        with contextlib.suppress(OSError, ValueError):
            return int(Path(candidate).read_text())
    return None


def open_lab(term, page, user: str) -> None:
    """Wait for the student's lab; a page left on the hub's spawn-pending page (its progress
    stream dropped while ten servers started) is reloaded, as the student would."""
    from playwright.sync_api import TimeoutError as Slow

    try:
        steps.wait_for_lab(page, user)
    except Slow:
        page.goto(f"{term.base(user)}/lab")
        steps.wait_for_lab(page, user)


@pytest.mark.bench
def test_a_class_of_ten_validates_and_submits_at_once(shots):
    prefix = f"mlk{secrets.token_hex(2)}"
    roles = ["right" if n % 2 == 0 else "wrong" for n in range(CLASS_SIZE)]
    students = {f"s{n:02d}-{role}": f"{prefix}-s{n:02d}" for n, role in enumerate(roles)}
    with container_hub(prefix, students) as term:
        prof = steps.begin_log_in(term, term.instructor)
        steps.wait_for_lab(prof, term.instructor)
        steps.formgrader(term, prof, term.instructor)
        steps.release(term, prof)
        pages = {user: steps.begin_log_in(term, user) for user in students.values()}
        for key, user in students.items():
            open_lab(term, pages[user], user)
            steps.fetch(pages[user], key)
            steps.write_answer(term, pages[user], user, steps.answer_of(key.split("-")[1]))
        for user in students.values():  # all ten press Validate together
            steps.press_validate(pages[user])
        seconds = {}
        for key, user in students.items():
            kind, text, seconds[user] = steps.validate_result(pages[user])
            expected = steps.VALIDATE_SAYS[key.split("-")[1]]
            assert kind == expected[0] and expected[1] in text, f"{key}: {text[:1000]}"
            steps.close_dialog(pages[user])
        for user in students.values():  # and submit together
            steps.assignment_list(pages[user])
            pages[user].get_by_role("button", name="Submit", exact=True).click()
        for user in students.values():
            pages[user].locator("#submitted_assignments_list .list_item").first.wait_for()
        steps.shoot(pages[students["s00-right"]], "20-class-submitted")
        peaks = {user: peak_memory_bytes(term.hub, user) for user in students.values()}
        CLASS_REPORT.parent.mkdir(parents=True, exist_ok=True)
        times = sorted(seconds.values())
        CLASS_REPORT.write_text(json.dumps({
            "students": CLASS_SIZE, "validate_median_s": statistics.median(times),
            "validate_worst_s": times[-1], "validate_s": seconds,
            "peak_memory_bytes": peaks}, indent=2))
        # every submission reached the exchange as it was written: the instructor collects
        steps.formgrader(term, prof, term.instructor)
        steps.press(prof, steps.assignment_row("collect"))
        for user in students.values():
            submitted = term.course / "submitted" / user / steps.SERIES
            written = term.home(user) / steps.SERIES / f"{steps.NOTEBOOK}.ipynb"
            assert steps.digest(submitted / f"{steps.NOTEBOOK}.ipynb") == steps.digest(written)
        listing = in_container(term.hub, students["s00-right"], PRYING.format(
            course=hubctl.COURSE_ID, assignment=steps.SERIES, victim=students["s01-wrong"]))
        assert json.loads(listing.stdout)["homes"] == ["jovyan"]
