"""The whole term on the course's JupyterHub, in Chromium (deploy/hub/, `make hub`).

Throwaway Unix users (an instructor, a TA and three students, each with their own password)
log in to a real hub started by deploy/hub/hubctl.py, through PAM; a student's try at the
instructor's or another student's account with their own password is refused. The instructor
opens the formgrader from the Nbgrader menu and releases notebook 01; the students fetch it from
the Assignment List, write a correct, a wrong and a hostile answer, press Validate and submit; a
fourth student is added to the roster mid-term (`hubctl.py roster`, no restart), logs in and
fetches while another student's kernel keeps running; the TA opens the formgrader from the menu,
collects, autogrades with the formgrader's button, generates and releases feedback, and exports
the grades from a JupyterLab terminal (`nbgrader export`: the roster's names and e-mail, the late
joiner marked as not submitted); the students fetch their feedback and read their scores; the
logs are where the README says, and staff only. Needs root (useradd, chpasswd), Debian's Chromium
and the proxy from npm (`make hub` / `make test` install it into build/node); skipped with the
reason where one is missing. Screenshots of every step: build/hub-screenshots/.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, free_port

from mlmcourse.build.samples import expected_scores, load_sample, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import cells_by_grade_id
from mlmcourse.course.layout import SERIES, notebook_names

# The browser tests' driver (tests/browser/) and the hub's own command line (deploy/hub/).
sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "deploy" / "hub")]
import hubctl  # noqa: E402
import labdriver as lab  # noqa: E402

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "01_corruption"
ANSWER = "make_mlm_inputs"
SAMPLES = {"right": "reference", "wrong": "wrong_labels_every_token",
           "hostile": "hostile_gradebook"}
SHOTS = ROOT / "build" / "hub-screenshots"
SHOTS_NOW = [SHOTS]  # where shoot() writes (the container term writes elsewhere)


@dataclass
class Term:
    """The running hub and who is in the class."""

    url: str
    hub: Path
    instructor: str
    ta: str
    students: dict[str, str]  # role in this test -> Unix user
    newcomer: str  # a student the roster adds mid-term
    passwords: dict[str, str]  # each user's own
    roster: list[dict]
    browser: object
    process: HubProcess
    times: dict[str, float] = field(default_factory=dict)
    launch: object = None  # LTI mode: user -> the LMS's launch link (no password)

    @property
    def course(self) -> Path:
        return hubctl.course_dir(self.hub, self.instructor)

    def home(self, user: str) -> Path:
        """The user's home folder as this machine sees it (on containers: hub/homes/<user>)."""
        return self.hub / "homes" / user if hubctl.on_containers(self.hub) else hubctl.home(user)

    def base(self, user: str) -> str:
        return f"{self.url}/user/{user}"


def why_not_here() -> str | None:
    if os.geteuid() != 0:
        return "the hub test creates Unix users and starts a hub: run it as root (.ci/run does)"
    for tool in ("useradd", "chpasswd", "gpasswd"):
        if shutil.which(tool) is None:
            return f"the hub test needs {tool} (Debian package passwd)"
    if not Path("/etc/pam.d/login").is_file():
        return "the hub logs users in through PAM's `login` service: /etc/pam.d/login is missing"
    if not hubctl.PROXY.is_file():
        return f"{hubctl.PROXY} is missing: `make hub` or `make test` installs it with npm"
    if not lab.CHROMIUM.is_file():
        return f"{lab.CHROMIUM} not found: {lab.INSTALL_HINT}"
    return None


def shoot(page, name: str) -> None:
    folder = SHOTS_NOW[0]
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


@contextlib.contextmanager
def class_users(prefix: str):
    """An instructor, a TA, three students and a late joiner, created with useradd, each with a
    password of their own (chpasswd), and removed afterwards."""
    instructor, ta, newcomer = f"{prefix}-prof", f"{prefix}-ta", f"{prefix}-new"
    students = {role: f"{prefix}-{role}" for role in SAMPLES}
    groups = [hubctl.staff_group(), hubctl.student_group()]
    made_groups = [g for g in groups if subprocess.run(["getent", "group", g],
                                                       capture_output=True).returncode != 0]
    created, passwords = [], {}
    try:
        for user in [instructor, ta, *students.values(), newcomer]:
            hubctl.create_user(user)
            created.append(user)
            passwords[user] = secrets.token_urlsafe(12)
            hubctl.set_password(user, passwords[user])
        yield instructor, ta, students, newcomer, passwords
    finally:
        for user in created:
            stop_processes_of(user)
            hubctl.remove_user(user)
        for group in made_groups:
            subprocess.run(["groupdel", group], capture_output=True)


def stop_processes_of(user: str) -> None:
    """Whatever the test's users still run (servers, kernels), by process id; waits until they
    are gone (userdel refuses a user who still runs a process)."""
    uid = hubctl.pwd.getpwnam(user).pw_uid
    deadline = time.monotonic() + 15
    while (running := processes_of(uid)) and time.monotonic() < deadline:
        for pid in running:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def processes_of(uid: int, word: bytes = b"") -> list[int]:
    """Process ids of the user's processes whose command line holds `word`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid and word in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def roster_rows(ta: str, students: list[str]) -> list[dict]:
    """The class as the school's roster gives it: names and e-mail reach gradebook and export."""
    rows = [{"id": ta, "first_name": "Dana", "last_name": "Tutor", "email": f"{ta}@uni.example",
             "role": "ta"}]
    for n, user in enumerate(students):
        rows.append({"id": user, "first_name": f"Ann{n}", "last_name": f"Student{n}",
                     "email": f"{user}@uni.example", "role": "student"})
    return rows


def write_roster(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["id", "first_name", "last_name", "email", "role"])
        writer.writeheader()
        writer.writerows(rows)
    return path


class HubProcess:
    """The hub, started as `make hub` starts it (hubctl.py's command), on ports of its own."""

    def __init__(self, hub: Path):
        self.hub = hub
        self.command, self.env = hubctl.hub_command(hub)
        ports = {"PORT": free_port(), "HUB_PORT": free_port(), "API_PORT": free_port(),
                 "NGSHARE_PORT": free_port(), "LTI_PORT": free_port()}
        self.env.update({f"MLMCOURSE_HUB_{name}": str(port) for name, port in ports.items()})
        self.url = f"http://127.0.0.1:{ports['PORT']}"
        self.log = hub / "jupyterhub.out"
        self.process = None

    def start(self) -> None:
        hubctl.start_checks(self.hub)
        with self.log.open("a") as log:
            self.process = subprocess.Popen(self.command, cwd=self.hub / "state", env=self.env,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        wait_for(f"{self.url}/hub/login", self.process, self.log)

    def stop(self) -> None:
        if self.process is not None:  # (None: the start failed before the hub ran)
            lab.stop_server(self.process)


@contextlib.contextmanager
def running_hub(hub: Path, env: dict[str, str] | None = None):
    process = HubProcess(hub)
    process.env.update(env or {})
    try:
        process.start()
        yield process
    finally:
        process.stop()
        # A stopped hub leaves the proxy and the users' servers running (so that a restart
        # does not stop them): the proxy by its pid file, the users' processes in class_users.
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((hub / "state" / "proxy.pid").read_text()), signal.SIGTERM)
        for service in hubctl.services_of(hub):  # (a hub killed in its clean-up leaves them)
            hubctl.end_process(service, 10)


def wait_for(url: str, process: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the hub exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        time.sleep(0.3)
    raise RuntimeError(f"the hub did not answer in {seconds} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def term():
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    hub = Path(tempfile.mkdtemp(prefix="mlmcourse-hub-"))
    os.chmod(hub, 0o755)  # users' servers read roles/, python/ and bin/ under it
    prefix = f"mlm{secrets.token_hex(3)}"
    try:
        with class_users(prefix) as (instructor, ta, students, newcomer, passwords):
            rows = roster_rows(ta, list(students.values()))
            roster = write_roster(hub / "roster.csv", rows)
            hubctl.setup(hub, instructor, notebooks=[NOTEBOOK],
                         roster=hubctl.read_roster(roster))
            with running_hub(hub) as process, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(lab.CHROMIUM),
                                                     args=lab.CHROMIUM_ARGS, headless=True)
                try:
                    yield Term(process.url, hub, instructor, ta, students, newcomer, passwords,
                               rows, browser, process)
                finally:
                    browser.close()
    finally:
        shutil.rmtree(hub, ignore_errors=True)


@pytest.fixture(autouse=True)
def the_clone_as_it_was():
    """Set-up closes the repository to other users (hubctl.close_repository); afterwards the
    test opens it as it was, so the rest of the suite finds the clone as CI made it."""
    mode = os.stat(ROOT).st_mode
    yield
    os.chmod(ROOT, mode)


# ---------------------------------------------------------------------------------------------
# Logging in, and the nbgrader panels of JupyterLab.

def begin_log_in(term: Term, user: str, password: str | None = None):
    """A browser of the user's own, logging in with their password (or the one given), or
    launched from the LMS (LTI mode); the hub then starts the user's JupyterLab (several users'
    servers start at once while the test goes on with another)."""
    context = term.browser.new_context(viewport=lab.VIEWPORT, device_scale_factor=1)
    context.set_default_timeout(60_000)
    page = context.new_page()
    if term.launch is not None:  # from the course's page in the LMS: the launch signs in
        page.goto(term.launch(user))
        return page
    page.goto(f"{term.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", term.passwords[user] if password is None else password)
    page.click("#login_submit", no_wait_after=True)
    return page


def refused(term: Term, user: str, password: str, shot: str) -> bool:
    """Whether the hub turns this login away (and stays on its login page, saying why)."""
    page = begin_log_in(term, user, password)
    page.locator(".login_error").wait_for()
    shoot(page, shot)
    says = page.locator(".login_error").inner_text()
    page.context.close()
    return "/hub/login" in page.url and "Invalid username or password" in says


def wait_for_lab(page, user: str) -> None:
    page.wait_for_url(re.compile(f"/user/{user}/lab"), timeout=180_000)
    page.locator(".jp-LabShell").wait_for(timeout=120_000)
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).wait_for()


def open_menu(page, menu: str) -> None:
    """Click a main-menu title until its menu shows (a click on an active menu bar closes it)."""
    for _ in range(3):
        page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
        with contextlib.suppress(Exception):
            page.locator(".lm-Menu:visible").first.wait_for(timeout=3000)
            return
    raise AssertionError(f"the {menu} menu does not open")


def open_menu_item(page, menu: str, command: str) -> None:
    open_menu(page, menu)
    page.locator(f".lm-Menu-item[data-command='{command}']").click()


def nbgrader_menu(page) -> list[str]:
    open_menu(page, "Nbgrader")
    items = page.locator(".lm-Menu-item[data-command^='nbgrader:']:visible")
    items.first.wait_for()
    shown = sorted(items.nth(i).get_attribute("data-command") for i in range(items.count()))
    page.keyboard.press("Escape")
    return shown


def assignment_list(page):
    open_menu_item(page, "Nbgrader", "nbgrader:open-assignment-list")
    panel = page.locator("#nbgrader-assignment-list, .nbgrader-AssignmentList").first
    panel.wait_for()
    return page


def formgrader_from_menu(page, who: str):
    """Nbgrader > Formgrader, as a TA clicks it: the lab's frame shows the note of
    deploy/hub/formgrader_tab.py, whose button opens the formgrader in a browser tab of its own
    (JupyterHub forbids framing it); returns that tab, showing Manage Assignments."""
    open_menu_item(page, "Nbgrader", "nbgrader:open-formgrader")
    note = page.frame_locator("iframe[src*='formgrader']")
    button = note.get_by_role("link", name="Open the formgrader in a new tab")
    button.wait_for()
    shoot(page, f"02-{who}-formgrader-note")
    with page.context.expect_page() as opened:
        button.click()
    tab = opened.value
    tab.locator(f"tbody td.name:has-text('{SERIES}')").wait_for()
    shown = tab.request.get(tab.url)  # not framed: JupyterHub's own policy, no frame at all
    assert "frame-ancestors 'none'" in shown.headers.get("content-security-policy", ""), (
        shown.headers)
    shoot(tab, f"02-{who}-formgrader-tab")
    return tab


def walk_the_formgrader(tab, student: str) -> list[str]:
    """Every page of the formgrader by clicks in its tab, as a TA moves between them: Manage
    Assignments, the submission count (Manage Submissions), Gradebook (Manual Grading: the
    assignment, the notebook, one student's answers), Manage Students; returns the names that
    Manage Students lists."""
    def go(locator, ready: str, shot: str) -> None:
        locator.click()
        tab.locator(ready).first.wait_for()
        shoot(tab, shot)

    dialog = tab.locator(".modal.in")  # the last button's result, still open
    if dialog.count():
        dialog.get_by_role("button", name="OK").click()
        dialog.wait_for(state="hidden")
    nav = tab.locator("ul.nav")
    gradebook = re.compile("^(Gradebook|Manual Grading)$")  # the sidebar's name for it varies
    go(nav.get_by_role("link", name="Manage Assignments"),
       f"tbody td.name:has-text('{SERIES}')", "10-ta-manage-assignments")
    go(tab.locator("td.num-submissions a").first, "tbody td.student-id",
       "10-ta-manage-submissions")
    go(nav.get_by_role("link", name=gradebook), f"tbody td a:has-text('{SERIES}')",
       "10-ta-gradebook")
    go(tab.locator(f"tbody td a:has-text('{SERIES}')").first,
       f"tbody td a:has-text('{NOTEBOOK}')", "10-ta-gradebook-assignment")
    go(tab.locator(f"tbody td a:has-text('{NOTEBOOK}')").first, "tbody td a:visible",
       "10-ta-gradebook-notebook")
    go(tab.locator("tbody td a:visible").first, ".nbgrader_cell", "10-ta-manual-grading")
    # Manual Grading's own page has breadcrumbs, not the sidebar: back to the Gradebook first
    go(tab.get_by_role("link", name="Manual Grading").first,
       f"tbody td a:has-text('{SERIES}')", "10-ta-gradebook-again")
    go(nav.get_by_role("link", name="Manage Students"), "tbody td.name a", "10-ta-students")
    go(tab.locator("tbody td.name a", has_text=student).first,
       f"tbody td.name:has-text('{SERIES}')", "10-ta-one-student")
    tab.locator("ul.nav").get_by_role("link", name="Manage Students").click()
    tab.locator("tbody td.name a").first.wait_for()
    return tab.locator("tbody td.name").all_inner_texts()


def formgrader(term: Term, page, user: str) -> None:
    """The formgrader's Manage Assignments page, once its table has loaded."""
    page.goto(f"{term.base(user)}/formgrader/")
    page.locator(f"tbody td.name:has-text('{SERIES}')").wait_for()


def press(page, selector: str, timeout: float = 300_000) -> str:
    """A formgrader button; waits for its result dialog and returns its text (fails on error)."""
    page.locator(selector).first.click()
    outcome = page.locator("#success-modal.in, #error-modal.in")
    outcome.wait_for(state="visible", timeout=timeout)
    text = outcome.inner_text()
    assert outcome.get_attribute("id") == "success-modal", f"{selector}: {text[-3000:]}"
    return text


def assignment_row(action: str) -> str:
    return f"tr:has(td.name:has-text('{SERIES}')) td.{action} a"


# ---------------------------------------------------------------------------------------------
# What the students write, and what they must earn.

def sample(role: str):
    return load_sample(ROOT / "samples" / f"{SAMPLES[role]}.py", notebook_names(ROOT))


def answer_of(role: str) -> str:
    nb = sample_notebook(ROOT, sample(role), NOTEBOOK)
    return cells_by_grade_id(nb)[ANSWER].source


def expected_points(role: str) -> float:
    return expected_scores(ROOT, sample(role))[NOTEBOOK]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# The steps of the term.

def release(term: Term, page) -> None:
    """The instructor generates the student version and releases it to the exchange."""
    formgrader(term, page, term.instructor)
    press(page, assignment_row("assign"))
    formgrader(term, page, term.instructor)
    press(page, assignment_row("release"))
    formgrader(term, page, term.instructor)
    page.locator(f"tr:has(td.name:has-text('{SERIES}')) .label-success").wait_for()
    shoot(page, "03-instructor-released")


def fetch(page, who: str) -> None:
    """The Assignment List's Fetch button (the course's only released assignment), after its
    refresh button (a list opened before the release, as a launch opens it, shows none yet)."""
    assignment_list(page)
    page.get_by_title("Refresh assignments list").click()
    page.get_by_role("button", name="Fetch", exact=True).click()
    page.get_by_role("button", name="Submit", exact=True).wait_for(timeout=180_000)  # loaded CI
    shoot(page, f"04-{who}-fetched")


def write_answer(term: Term, page, user: str, answer: str) -> Path:
    """Type the answer into the fetched notebook and save it (what the student hands in)."""
    relative = f"{SERIES}/{NOTEBOOK}.ipynb"
    work = term.home(user) / relative
    index = next(i for i, cell in enumerate(nbio.read(work).cells)
                 if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ANSWER)
    lab.open_notebook(page, term.base(user), relative)
    lab.set_cell_source(page, index, answer)
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved_source(work, index) != answer:
        assert time.monotonic() < deadline, f"{user}: the notebook was not saved"
        time.sleep(0.3)
    return work


def saved_source(notebook: Path, index: int) -> str | None:
    """The cell's text on disk, or None while the server is still writing the file."""
    try:
        return nbio.read(notebook).cells[index].source
    except Exception:  # noqa: BLE001 (a half-written file reads as anything)
        return None


# Validate's time, measured in the page: from the click to nbgrader's result dialog.
# What each student's Validate must show: its kind, and a phrase of the dialog.
VALIDATE_SAYS = {
    "right": ("success", "Success"),
    "wrong": ("failed", "labels"),
    "hostile": ("failed", "ignore_index=-7"),
}

VALIDATE_CLOCK = """() => {
    window.mlmValidate = {start: Date.now(), end: null};
    const shown = () => document.querySelector('.nbgrader-SuccessDialog, .nbgrader-ErrorDialog');
    new MutationObserver((_, observer) => {
        if (shown()) { window.mlmValidate.end = Date.now(); observer.disconnect(); }
    }).observe(document.body, {childList: true, subtree: true});
}"""


def press_validate(page) -> None:
    page.evaluate(VALIDATE_CLOCK)
    page.locator("jp-button.validate-button").click()


def validate_result(page) -> tuple[str, str, float]:
    """'success' or 'failed', the dialog's text, and the seconds Validate took."""
    dialog = page.locator(".nbgrader-SuccessDialog, .nbgrader-ErrorDialog")
    dialog.wait_for(timeout=lab.VALIDATE_WAIT_MS)
    kind = "success" if "nbgrader-SuccessDialog" in dialog.get_attribute("class") else "failed"
    seconds = page.evaluate("(window.mlmValidate.end - window.mlmValidate.start) / 1000")
    return kind, dialog.inner_text(), seconds


def close_dialog(page) -> None:
    page.locator(".jp-Dialog button.jp-Dialog-button").last.click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def submit(page, who: str) -> None:
    assignment_list(page)
    page.get_by_role("button", name="Submit", exact=True).click()
    page.locator("#submitted_assignments_list .list_item").first.wait_for()
    shoot(page, f"07-{who}-submitted")


def add_student_mid_term(term: Term, pages: dict) -> None:
    """The roster gains a student while the hub runs: `hubctl.py roster` (no restart); the new
    student logs in and fetches; the right student's server and kernel keep running."""
    right = term.students["right"]
    uid = hubctl.pwd.getpwnam(right).pw_uid
    kernels = processes_of(uid, b"ipykernel")
    servers = processes_of(uid, b"jupyterhub.singleuser")
    assert kernels and servers, "the right student's kernel is not running"
    hub_pid = hubctl.hub_pid(term.hub)
    assert refused(term, term.newcomer, term.passwords[term.newcomer],
                   "04-newcomer-refused-before-the-roster-has-them")
    rows = roster_rows(term.ta, [*term.students.values(), term.newcomer])
    roster = write_roster(term.hub / "roster-2.csv", rows)
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "hub" / "hubctl.py"), "roster",
                           str(roster), "--hub", str(term.hub)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"added {term.newcomer} (student)" in done.stdout, done.stdout
    page = pages[term.newcomer] = begin_log_in(term, term.newcomer)
    wait_for_lab(page, term.newcomer)
    assert nbgrader_menu(page) == ["nbgrader:open-assignment-list"]
    fetch(page, "newcomer")
    assert (hubctl.home(term.newcomer) / SERIES / f"{NOTEBOOK}.ipynb").is_file()
    assert hubctl.hub_pid(term.hub) == hub_pid, "the hub restarted"
    alive = [pid for pid in kernels + servers if Path(f"/proc/{pid}").exists()]
    assert alive == kernels + servers, "the right student's server or kernel stopped"


def restart_the_hub(term: Term) -> None:
    """A restart of the hub (a new configuration, an upgrade) stops nobody's server: the
    students' kernels keep running, and the rest of the term goes through the restarted hub."""
    before = {user: processes_of(hubctl.pwd.getpwnam(user).pw_uid, b"ipykernel")
              for user in term.students.values()}
    term.process.stop()
    term.process.start()
    for user, kernels in before.items():
        assert kernels and all(Path(f"/proc/{pid}").exists() for pid in kernels), (
            f"{user}'s kernel stopped with the hub")


def grade_and_release_feedback(term: Term, page, grader: str | None = None) -> None:
    """The TA (or `grader`): collect, the Autograde button of each submission, generate and
    release feedback."""
    grader = grader or term.ta
    formgrader(term, page, grader)
    press(page, assignment_row("collect"))
    for user in term.students.values():
        page.goto(f"{term.base(grader)}/formgrader/manage_submissions/{SERIES}")
        row = page.locator("tbody tr", has=page.locator(
            "td.student-id", has_text=re.compile(f"^{user}$")))
        row.locator("td.autograde a").click()
        outcome = page.locator("#success-modal.in, #error-modal.in")
        outcome.wait_for(state="visible", timeout=300_000)
        assert outcome.get_attribute("id") == "success-modal", outcome.inner_text()[-3000:]
    page.goto(f"{term.base(grader)}/formgrader/manage_submissions/{SERIES}")
    page.locator("tbody td.score").first.wait_for()
    shoot(page, "08-ta-autograded")
    formgrader(term, page, grader)
    press(page, assignment_row("generate-feedback"))
    formgrader(term, page, grader)
    press(page, assignment_row("release-feedback"))
    page.wait_for_timeout(500)  # the dialog fades in
    shoot(page, "09-ta-feedback-released")


def open_terminal(page, base: str) -> None:
    """File > New > Terminal, as a user opens one."""
    page.goto(f"{base}/lab")
    page.locator(".jp-LabShell").wait_for()
    open_menu(page, "File")
    page.locator(".lm-Menu-item[data-type='submenu']", has_text=re.compile("^New")).hover()
    page.locator(".lm-Menu-item[data-command='terminal:create-new']:visible").click()
    page.locator(".jp-Terminal .xterm-screen").last.wait_for()


def type_until(page, command: str, done, seconds: float = 60) -> bool:
    """Type a command into the open terminal until `done()` (keys typed before the terminal's
    connection is up are lost: type again)."""
    for _ in range(4):
        page.locator(".jp-Terminal .xterm-screen").last.click()
        page.keyboard.type(command + "\n")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not done():
            time.sleep(0.5)
        if done():
            return True
    return False


def export_in_terminal(term: Term, page) -> list[dict]:
    """The TA opens a JupyterLab terminal (File > New > Terminal) in the course folder and runs
    `nbgrader export` and the class report, as the README says (`python -m mlmcourse report`);
    returns the CSV's rows."""
    open_terminal(page, term.base(term.ta))
    target = term.course / "grades-lms.csv"
    report = term.course / "reports" / "class-report.html"
    ran = type_until(page, "which nbgrader && nbgrader export && python -m mlmcourse report",
                     lambda: target.is_file() and target.read_text().count("\n") >= 5
                     and report.is_file())
    page.wait_for_timeout(500)
    shoot(page, "11-ta-export-terminal")
    assert ran, "nbgrader export and the report in the TA's terminal wrote no grades-lms.csv"
    with target.open(newline="") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------------------------------------
# What a student can read: a walk of the whole machine from their terminal and their kernel.

GRADE_FILES = ["gradebook.db", "samples-gradebook.db", "grades.csv", "grades-lms.csv",
               "class-report.html", "scores.csv"]


def secret_lines() -> list[str]:
    """Lines only the instructor's notebooks hold: from every notebook's solutions and hidden
    tests, the longest lines that no released notebook holds (quotes and backslashes left out,
    so a line reads the same inside a notebook's JSON)."""
    released = "\n".join(p.read_text() for p in (ROOT / "release").rglob("*.ipynb"))
    needles = []
    for path in sorted((ROOT / "source" / SERIES).glob("*.ipynb")):
        for kind in ("SOLUTION", "HIDDEN TESTS"):
            lines = set()
            for cell in nbio.read(path).cells:
                inside = False
                for line in cell.source.splitlines():
                    if f"### BEGIN {kind}" in line:
                        inside = True
                    elif f"### END {kind}" in line:
                        inside = False
                    elif inside:
                        text = line.strip()
                        if len(text) >= 30 and not {'"', "\\"} & set(text) and (
                                text not in released):
                            lines.add(text)
            needles += sorted(lines, key=len, reverse=True)[:3]
    return needles


def walk_plan(term: Term, user: str, own: str | None = None) -> Path:
    """The walk's input in the student's home: the needles, the paths a student could know
    (every file of the repository and of the hub's course, exchange and homes). `own`: the
    home as the student sees it (in a container: /home/jovyan)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    known = [str(ROOT / p) for p in tracked]
    known += [str(ROOT / p) for p in ("gradebook.db", "grades.csv", "grades-lms.csv",
                                      "build/samples-gradebook.db", "build/site/index.html")]
    for folder in (term.course, term.hub, *(term.home(u) for u in term.students.values())):
        known += [str(p) for p in folder.rglob("*") if p.is_file() and not secret_name(term, p)]
    plan = {"needles": secret_lines(), "known": known, "own": own or str(term.home(user)),
            "names": GRADE_FILES}
    assert len(plan["needles"]) >= 6, plan["needles"]
    home = term.home(user)
    (home / "walk-plan.json").write_text(json.dumps(plan))
    shutil.copy2(ROOT / "tests" / "student_walk.py", home / "student_walk.py")
    for name in ("walk-plan.json", "student_walk.py"):
        shutil.chown(home / name, home.stat().st_uid, home.stat().st_gid)
    return home / "walk-plan.json"


def secret_name(term: Term, path: Path) -> bool:
    """A name nbgrader makes unguessable, in a folder students cannot list: a submission's
    (`<student>+<assignment>+<time>+<random>`) in inbound/, a feedback file's (a hash of the
    student's own notebook and its time) in feedback/. Knowing it is what those modes deny."""
    exchange = term.hub / "exchange" / hubctl.COURSE_ID
    return any(folder in path.parents for folder in (exchange / "inbound", exchange / "feedback"))


def begin_walk_in_terminal(term: Term, page, user: str) -> Path:
    walk_plan(term, user)
    open_terminal(page, term.base(user))
    out = term.home(user) / "walk-terminal.json"
    assert type_until(page, "python3 ~/student_walk.py ~/walk-plan.json ~/.walk.tmp && "
                      "mv ~/.walk.tmp ~/walk-terminal.json",
                      lambda: (term.home(user) / ".walk.tmp").exists() or out.exists(), 20)
    return out


def begin_walk_in_kernel(term: Term, page, user: str) -> Path:
    """The same walk from a notebook's kernel: a notebook of the student's own, Run All."""
    walk_plan(term, user)
    notebook = term.home(user) / "walk.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {  # no kernel picker: the default
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(
        "import os, runpy, sys\n"
        "sys.argv = ['walk', os.path.expanduser('~/walk-plan.json'),\n"
        "            os.path.expanduser('~/.walk-kernel.tmp')]\n"
        "runpy.run_path(os.path.expanduser('~/student_walk.py'), run_name='__main__')\n"
        "os.rename(os.path.expanduser('~/.walk-kernel.tmp'),\n"
        "          os.path.expanduser('~/walk-kernel.json'))")]
    nbformat.write(nb, notebook)
    shutil.chown(notebook, user)
    lab.open_notebook(page, term.base(user), "walk.ipynb")
    lab.run_command(page, lab.RUN_ALL)
    return term.home(user) / "walk-kernel.json"


def walk_result(out: Path, seconds: float = 300) -> dict:
    deadline = time.monotonic() + seconds
    while not out.exists():
        assert time.monotonic() < deadline, f"the student's walk wrote no {out.name}"
        time.sleep(1)
    return json.loads(out.read_text())


def other_clones(found: list) -> list:
    """Findings inside another clone of the course on this machine (a developer's, CI's own
    checkout beside this one): the hub closes its own repository, not every copy a machine
    holds. A clone is a folder with .git and source/ that is not this repository."""
    def in_other_clone(path: str) -> bool:
        for folder in Path(path).parents:
            if (folder / ".git").exists() and (folder / "source").is_dir():
                return folder != ROOT
        return False
    return [f for f in found if in_other_clone(f[0])]


def read_feedback(term: Term, page, user: str, who: str) -> str:
    """Fetch feedback in the Assignment List and open it; returns the page's text."""
    assignment_list(page)
    page.get_by_role("button", name="Fetch Feedback").click()
    page.get_by_text("(view feedback)").wait_for()
    [html] = (term.home(user) / SERIES / "feedback").glob(f"*/{NOTEBOOK}.html")
    relative = html.relative_to(term.home(user)).as_posix()
    page.goto(f"{term.base(user)}/files/{relative}")
    page.wait_for_load_state("load")
    shoot(page, f"10-{who}-feedback")
    return page.locator("body").inner_text()


def gradebook_scores(term: Term) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{term.course / 'gradebook.db'}") as gradebook:
        return {user: (nb.score, nb.max_score) for user in term.students.values()
                for nb in [gradebook.find_submission_notebook(NOTEBOOK, SERIES, user)]}


def can_read(user: str, path: Path) -> bool:
    """Whether `user` can read the file or list the folder (asked as that user)."""
    command = ["ls", str(path)] if path.is_dir() else ["head", "-c1", str(path)]
    return subprocess.run(["runuser", "-u", user, "--", *command],
                          capture_output=True).returncode == 0


def inbound_copies(term: Term, user: str) -> list[Path]:
    inbound = term.hub / "exchange" / hubctl.COURSE_ID / "inbound"
    return sorted(inbound.glob(f"{user}+{SERIES}+*/{NOTEBOOK}.ipynb"))


def marker_files(term: Term) -> list[Path]:
    homes = [hubctl.home(u) for u in [term.instructor, term.ta, *term.students.values()]]
    return [p for folder in [term.hub, *homes] for p in folder.rglob("HACKED_BY_*")]


def test_a_whole_term_on_the_hub(term):
    shutil.rmtree(SHOTS, ignore_errors=True)  # this run's screenshots only
    start = time.monotonic()
    lap = lambda name: term.times.__setitem__(name, time.monotonic() - start)  # noqa: E731
    students = list(term.students.values())
    pages = {user: begin_log_in(term, user) for user in [term.instructor, term.ta, *students]}
    # While their servers start: each account is its own. With a student's own password,
    # neither the instructor's account nor another student's opens.
    mine = term.passwords[term.students["right"]]
    assert refused(term, term.instructor, mine, "00-student-as-instructor-refused")
    assert refused(term, term.students["wrong"], mine, "00-student-as-other-student-refused")
    lap("wrong passwords refused")
    prof = pages[term.instructor]
    wait_for_lab(prof, term.instructor)
    assert nbgrader_menu(prof) == ["nbgrader:open-assignment-list", "nbgrader:open-course-list",
                                   "nbgrader:open-create-assignment", "nbgrader:open-formgrader"]
    shoot(prof, "01-instructor-lab")
    lap("instructor's JupyterLab open")
    prof_tab = formgrader_from_menu(prof, "instructor")
    lap("formgrader open from the menu")
    release(term, prof_tab)
    lap("assignment released")
    protected = {p: digest(p) for p in [term.course / "nbgrader_config.py",
                                        *(term.course / "source").rglob("*.ipynb")]}

    work = {}
    for role, user in term.students.items():
        page = pages[user]
        wait_for_lab(page, user)
        assert nbgrader_menu(page) == ["nbgrader:open-assignment-list"], (
            "a student's Nbgrader menu offers more than the Assignment List")
        fetch(page, role)
        work[user] = write_answer(term, page, user, answer_of(role))
        shoot(page, f"05-{role}-answer")
    lap("answers written")
    add_student_mid_term(term, pages)
    lap("student added mid-term, fetched")
    for user in students:  # the three press Validate at about the same time
        press_validate(pages[user])
    handed_in: dict[str, str] = {}
    for role, user in term.students.items():
        page = pages[user]
        kind, text, seconds = validate_result(page)
        term.times[f"Validate, {role} answer"] = seconds
        shoot(page, f"06-{role}-validate")
        # Honest: the right answer passes; the wrong one breaks a visible check, and so does
        # the hostile one, whose answer hard-codes -100 (a graded cell's public part catches it).
        assert kind == VALIDATE_SAYS[role][0], f"{role}: {lab.excerpt(text)}"
        assert VALIDATE_SAYS[role][1] in text, f"{role}: {lab.excerpt(text)}"
        close_dialog(page)
        submit(page, role)
        handed_in[user] = digest(work[user])
    lap("validated and submitted")

    logs = term.hub / "logs"
    for user in [*students, term.newcomer]:
        others = [hubctl.home(u) for u in students if u != user]
        for path in [term.course / "source", term.course / "gradebook.db",
                     term.course / "source" / SERIES / f"{NOTEBOOK}.ipynb",
                     hubctl.home(term.instructor), *others,
                     term.hub / "exchange" / hubctl.COURSE_ID / "inbound", logs,
                     logs / "jupyterhub.log", logs / "servers" / f"{user}.log"]:
            assert not can_read(user, path), f"student {user} can read {path}"

    ta = pages[term.ta]
    wait_for_lab(ta, term.ta)
    ta_tab = formgrader_from_menu(ta, "ta")
    grade_and_release_feedback(term, ta_tab)
    lap("TA graded, feedback released")
    shown = walk_the_formgrader(ta_tab, term.roster[1]["last_name"])
    lap("TA walked the formgrader by clicks")
    for entry in term.roster[1:]:  # the roster's names, not `ann, ` (and the e-mail it gave)
        assert f"{entry['last_name']}, {entry['first_name']}" in shown, shown
    scores = gradebook_scores(term)
    for role, user in term.students.items():
        assert scores[user] == (expected_points(role), 24), f"{role}: {scores[user]}"
        copies = [*inbound_copies(term, user),
                  term.course / "submitted" / user / SERIES / f"{NOTEBOOK}.ipynb"]
        assert len(copies) == 2 and {digest(p) for p in copies} == {handed_in[user]}, (
            f"{role}: a submitted file differs from what the student handed in")
    assert not marker_files(term), "the hostile student wrote next to somebody's files"
    assert {p: digest(p) for p in protected} == protected, "the instructor's files changed"

    for role, user in term.students.items():
        text = read_feedback(term, pages[user], user, role)
        got = expected_points(role)
        assert re.search(rf"\b{got:g}(\.0+)? / 24\b", text), f"{role} reads no {got:g} / 24"
    lap("feedback read")

    rows = {row["student_id"]: row for row in export_in_terminal(term, ta)}
    lap("TA exported the grades")

    # Everything a student can read, walked from a kernel and from a terminal of theirs (now
    # that grades, feedback and exports exist): no hidden test, solution, grade or other's work.
    walks = {"kernel": begin_walk_in_kernel(term, pages[term.students["hostile"]],
                                            term.students["hostile"]),
             "terminal": begin_walk_in_terminal(term, pages[term.students["wrong"]],
                                                term.students["wrong"])}
    for way, out in walks.items():
        seen = walk_result(out)
        print(f"walk from a {way}: {seen['walked']} files seen, {seen['read']} searched")
        leaks = [f for f in seen["found"] if f not in other_clones(seen["found"])]
        assert seen["walked"] > 2_000 and seen["read"] > 1_000, seen
        assert not leaks, f"a student reads from a {way}: {leaks[:20]}"
    shoot(pages[term.students["wrong"]], "11-student-walk-terminal")
    lap("students walked the machine")
    for entry in roster_rows(term.ta, [*students, term.newcomer])[1:]:
        row = rows[entry["id"]]
        assert (row["first_name"], row["last_name"], row["email"]) == (
            entry["first_name"], entry["last_name"], entry["email"]), row
    for role, user in term.students.items():
        assert rows[user]["submitted"] == "yes" and rows[user]["late"] == "no", rows[user]
        assert float(rows[user]["score"]) == expected_points(role), rows[user]
        assert rows[user]["timestamp"].endswith("+00:00"), rows[user]
    assert rows[term.newcomer]["submitted"] == "no", rows[term.newcomer]

    # A restart of the hub stops nobody's server (open pages show "Server unavailable" while
    # the hub is down, and go on after a Dismiss; this test's pages are done by now).
    restart_the_hub(term)
    lap("hub restarted, servers kept")

    # The newcomer leaves the roster (through the restarted hub): refused at the door, server
    # stopped, nobody else's.
    leaves = write_roster(term.hub / "roster-3.csv", term.roster)
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "hub" / "hubctl.py"), "roster",
                           "--hub", str(term.hub), str(leaves)], capture_output=True, text=True)
    assert done.returncode == 0 and f"removed {term.newcomer}" in done.stdout, done.stderr
    gone = hubctl.pwd.getpwnam(term.newcomer).pw_uid
    deadline = time.monotonic() + 30
    while processes_of(gone, b"jupyterhub.singleuser"):
        assert time.monotonic() < deadline, "the removed student's server still runs"
        time.sleep(0.3)
    assert refused(term, term.newcomer, term.passwords[term.newcomer], "12-removed-refused")
    assert processes_of(hubctl.pwd.getpwnam(term.students["right"]).pw_uid, b"ipykernel")
    lap("student removed")

    # The logs the README names: the hub's, each server's, the grading runs'.
    assert "200 GET /hub/login" in (logs / "jupyterhub.log").read_text()
    for user in [term.instructor, term.ta, *students, term.newcomer]:
        assert "Jupyter Server" in (logs / "servers" / f"{user}.log").read_text(), user
    grading = (logs / "grading.log").read_text()
    shutil.copytree(logs, SHOTS / "logs", dirs_exist_ok=True)  # for a look after the run
    assert re.search(rf"{term.ta} INFO\] .*[Aa]utograd", grading), grading[-2000:]
    assert re.search(rf"{term.ta} INFO\] .*[Ee]xport", grading), grading[-2000:]
    assert can_read(term.ta, logs / "grading.log") and can_read(term.ta, logs / "jupyterhub.log")

    # make hub-stop: every user's server, the hub, the proxy (a plain stop leaves them running)
    proxy = int((term.hub / "state" / "proxy.pid").read_text())
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "hub" / "hubctl.py"), "stop",
                           "--hub", str(term.hub)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for user in [term.instructor, term.ta, *students]:
        uid = hubctl.pwd.getpwnam(user).pw_uid
        assert not processes_of(uid, b"jupyterhub.singleuser"), f"{user}'s server still runs"
        assert not processes_of(uid, b"ipykernel"), f"{user}'s kernel still runs"
    assert term.process.process.poll() is not None and not hubctl.hub_running(term.hub)
    assert not hubctl.command_line(proxy), "the proxy still runs"  # (gone, or a zombie)
    lap("make hub-stop")

    lap("whole term")
    SHOTS.mkdir(parents=True, exist_ok=True)
    report = "".join(f"{name}: {seconds:.1f} s\n" for name, seconds in term.times.items())
    (SHOTS / "times.txt").write_text(report)
    print(report)


def test_a_terms_operations_limits_the_culler_and_the_admin():
    """A student's server runs in the student's cgroup with the role's limits (user_limits.py),
    measured: a process there that takes 3 GB is killed, two busy processes get one CPU between
    them. The instructor is the hub's admin. A server left idle is stopped by the culler (here
    after 20 s; an hour by default). Numbers: build/hub-screenshots/operations.json."""
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    sys.path.insert(0, str(ROOT / "deploy" / "hub"))
    from user_limits import LIMITS, UserCgroups, in_bytes

    if UserCgroups(hubctl.COURSE_ID).why_not():
        pytest.skip(UserCgroups(hubctl.COURSE_ID).why_not())
    hub = Path(tempfile.mkdtemp(prefix="mlmcourse-hub-"))
    os.chmod(hub, 0o755)
    measured = {}
    try:
        with class_users(f"mlm{secrets.token_hex(3)}") as (instructor, ta, students, _, _):
            student = students["right"]
            rows = roster_rows(ta, list(students.values()))
            hubctl.setup(hub, instructor, notebooks=[NOTEBOOK],
                         roster=hubctl.read_roster(write_roster(hub / "roster.csv", rows)))
            with running_hub(hub, {"MLMCOURSE_HUB_IDLE_SECONDS": "20"}):
                assert hubctl.api(hub, "GET", f"/users/{instructor}")["admin"] is True
                assert hubctl.api(hub, "GET", f"/users/{ta}")["admin"] is False
                hubctl.api(hub, "POST", f"/users/{student}/server")
                started = time.monotonic()
                uid = hubctl.pwd.getpwnam(student).pw_uid
                while not (servers := processes_of(uid, b"jupyterhub.singleuser")) or not (
                        hubctl.api(hub, "GET", f"/users/{student}").get("server")):
                    assert time.monotonic() - started < 90, "the student's server did not start"
                    time.sleep(0.3)
                measured.update(in_the_cgroup(servers[0], student, LIMITS["student"], in_bytes))
                while hubctl.api(hub, "GET", f"/users/{student}").get("server"):
                    assert time.monotonic() - started < 120, "the culler left an idle server"
                    time.sleep(1)
                measured["culled after (s, idle limit 20 s)"] = round(
                    time.monotonic() - started, 1)
                gone = time.monotonic() + 15  # the hub says stopped as it sends the signal
                while processes_of(uid, b"jupyterhub.singleuser"):
                    assert time.monotonic() < gone, "the culled server's process still runs"
                    time.sleep(0.3)
    finally:
        shutil.rmtree(hub, ignore_errors=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "operations.json").write_text(json.dumps(measured, indent=2))
    print(json.dumps(measured, indent=2))


def in_the_cgroup(pid: int, user: str, limits: dict, in_bytes) -> dict:
    """The server's cgroup and its limits, measured with processes placed beside it."""
    groups = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            groups[name] = path
    memory_path = groups.get("memory") or groups[""]
    assert memory_path.endswith(f"/{hubctl.COURSE_ID}/{user}"), groups
    unified = not groups.get("memory")
    memory = Path("/sys/fs/cgroup") / ("" if unified else "memory") / memory_path.lstrip("/")
    cpu = Path("/sys/fs/cgroup") / ("" if unified else "cpu") / (
        groups.get("cpu") or memory_path).lstrip("/")
    limit = (memory / ("memory.max" if unified else "memory.limit_in_bytes")).read_text()
    assert int(limit) == in_bytes(limits["mem"]), limit

    def beside(code: str) -> subprocess.CompletedProcess:
        """Python as the user, in the server's cgroups (root moves the shell, then drops)."""
        move = " && ".join(f"echo $$ > {g / 'cgroup.procs'}" for g in {memory, cpu})
        return subprocess.run(["sh", "-c", f"{move} && exec runuser -u {user} -- python3 -c "
                               f"'{code}'"], capture_output=True, text=True, timeout=120)

    greedy = beside('b = b"x" * (3 << 30); print(len(b))')  # (written: bytes() maps zeros)
    assert greedy.returncode != 0 and not greedy.stdout, (greedy.returncode, greedy.stdout)
    busy = beside("import multiprocessing as m, os, time\n"
                  "def spin():\n    end = time.monotonic() + 3\n"
                  "    while time.monotonic() < end: pass\n"
                  "ps = [m.Process(target=spin) for _ in range(2)]\n"
                  "[p.start() for p in ps]; [p.join() for p in ps]\n"
                  "t = os.times(); print(t.children_user + t.children_system)")
    assert busy.returncode == 0, busy.stderr
    cpus = float(busy.stdout) / 3
    assert cpus <= limits["cpus"] * 1.15, f"{cpus:.2f} CPUs for two busy processes"
    return {"memory limit (bytes)": int(limit), "3 GB process": f"killed ({greedy.returncode})",
            "CPUs two busy processes got (limit 1.0)": round(cpus, 2)}


def test_setup_again_keeps_the_instructors_edits_and_a_running_hub_is_left_alone():
    """Set-up may be run again (a new notebook, a changed class): it writes only what is
    missing, so the instructor's edited nbgrader_config.py and notebooks stay; it refuses while
    the hub runs, and so does a second start (the roster command is the way then)."""
    reason = why_not_here()
    if reason:
        pytest.skip(reason)
    hub = Path(tempfile.mkdtemp(prefix="mlmcourse-hub-"))  # users' servers read parts of it
    os.chmod(hub, 0o755)
    other = Path(tempfile.mkdtemp(prefix="mlmcourse-hub-"))
    os.chmod(other, 0o755)
    try:
        with class_users(f"mlm{secrets.token_hex(3)}") as (instructor, ta, students, _, _):
            setup_twice(hub, instructor, ta, list(students.values()))
            a_second_course_beside(hub, other, instructor, ta, list(students.values()))
    finally:
        shutil.rmtree(hub, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
        for group in (hubctl.staff_group(SECOND), hubctl.student_group(SECOND)):
            subprocess.run(["groupdel", group], capture_output=True)


SECOND = "mlm_section_two"  # another course id: a second section on the same machine


def a_second_course_beside(hub: Path, other: Path, instructor: str, ta: str,
                           students: list[str]) -> None:
    """Two courses on one machine: their own groups, course folders and rosters; a roster
    change of one leaves the other's class alone; one hub folder is one course's."""
    rows = roster_rows(ta, students[:2])
    hubctl.setup(other, instructor, notebooks=[NOTEBOOK], course_id=SECOND,
                 roster=hubctl.read_roster(write_roster(other / "roster.csv", rows)))
    assert set(students[:2]) == hubctl.group_members(hubctl.student_group(SECOND))
    assert (hubctl.home(instructor) / SECOND / "nbgrader_config.py").is_file()
    exchange = other / "exchange" / SECOND
    assert exchange.stat().st_gid == hubctl.grp.getgrnam(hubctl.staff_group(SECOND)).gr_gid
    first = hubctl.group_members(hubctl.student_group())
    hubctl.apply_roster(other, instructor, hubctl.read_roster(
        write_roster(other / "roster-2.csv", roster_rows(ta, students[:1]))))
    assert hubctl.group_members(hubctl.student_group(SECOND)) == {students[0]}
    assert hubctl.group_members(hubctl.student_group()) == first, "the other course changed"
    with pytest.raises(hubctl.HubError, match="another course needs a hub folder"):
        hubctl.setup(hub, instructor, notebooks=[NOTEBOOK], course_id=SECOND,
                     roster=hubctl.read_roster(other / "roster.csv"))


def setup_twice(hub: Path, instructor: str, ta: str, students: list[str]) -> None:
    roster = hubctl.read_roster(write_roster(hub / "roster.csv", roster_rows(ta, students)))
    hubctl.setup(hub, instructor, notebooks=[NOTEBOOK], roster=roster)
    course = hubctl.home(instructor) / hubctl.COURSE_ID
    edited = [course / "nbgrader_config.py", course / "source" / SERIES / f"{NOTEBOOK}.ipynb"]
    for path in edited:
        path.write_text(path.read_text() + "\n# the instructor's edit\n")
    before = {path: digest(path) for path in edited}
    hubctl.setup(hub, instructor, notebooks=[NOTEBOOK, "02_stable_log_softmax"],
                 roster=roster[:-1])
    assert {path: digest(path) for path in edited} == before
    assert (course / "source" / SERIES / "02_stable_log_softmax.ipynb").is_file()
    assert roster[-1].id not in hubctl.group_members(hubctl.student_group())
    assert ta in hubctl.group_members(hubctl.staff_group())
    # a hub that runs (its pid file names a live jupyterhub process): hands off
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "jupyterhub"])
    try:
        while b"jupyterhub" not in Path(f"/proc/{fake.pid}/cmdline").read_bytes():
            time.sleep(0.05)  # until the fork has become that process
        (hub / "state" / "jupyterhub.pid").write_text(str(fake.pid))
        with pytest.raises(hubctl.HubError, match="roster"):
            hubctl.setup(hub, instructor, notebooks=[NOTEBOOK], roster=roster)
        with pytest.raises(hubctl.HubError, match="already running"):
            hubctl.start_checks(hub)
    finally:
        fake.kill()
        fake.wait()
