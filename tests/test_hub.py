"""The whole term on the course's JupyterHub, in Chromium (deploy/hub/, `make hub`).

Throwaway Unix users (an instructor and three students) log in to a real hub started by
deploy/hub/hubctl.py: the instructor releases notebook 01 from the formgrader; the students fetch
it from the Assignment List, write a correct, a wrong and a hostile answer, press Validate and
submit; the instructor collects, autogrades with the formgrader's button, generates and releases
feedback; the students fetch their feedback and read their scores. Needs root (useradd), Debian's
Chromium and the proxy from npm (`make hub` / `make test` install it into build/node); skipped
with the reason where one is missing. Screenshots of every step: build/hub-screenshots/.
"""

from __future__ import annotations

import contextlib
import hashlib
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

import pytest
from conftest import ROOT, free_port

from mlmcourse.build.samples import expected_scores, load_sample, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import cells_by_grade_id
from mlmcourse.course.layout import ASSIGNMENT, notebook_names

# The browser tests' driver (tests/browser/) and the hub's own command line (deploy/hub/).
sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "deploy" / "hub")]
import hubctl  # noqa: E402
import labdriver as lab  # noqa: E402

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "01_corruption"
ANSWER = "make_mlm_inputs"
SAMPLES = {"right": "reference", "wrong": "wrong_labels_every_token",
           "hostile": "hostile_gradebook"}
PASSWORD = secrets.token_urlsafe(12)
SHOTS = ROOT / "build" / "hub-screenshots"


@dataclass
class Term:
    """The running hub and who is in the class."""

    url: str
    hub: Path
    instructor: str
    students: dict[str, str]  # role in this test -> Unix user
    browser: object
    times: dict[str, float] = field(default_factory=dict)

    @property
    def course(self) -> Path:
        return hubctl.home(self.instructor) / hubctl.COURSE_ID

    def base(self, user: str) -> str:
        return f"{self.url}/user/{user}"


def why_not_here() -> str | None:
    if os.geteuid() != 0:
        return "the hub test creates Unix users and starts a hub: run it as root (.ci/run does)"
    if shutil.which("useradd") is None:
        return "the hub test needs useradd (Debian package passwd)"
    if not hubctl.PROXY.is_file():
        return f"{hubctl.PROXY} is missing: `make hub` or `make test` installs it with npm"
    if not lab.CHROMIUM.is_file():
        return f"{lab.CHROMIUM} not found: {lab.INSTALL_HINT}"
    return None


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@contextlib.contextmanager
def class_users(prefix: str):
    """An instructor and three students, created with useradd and removed afterwards."""
    instructor = f"{prefix}-prof"
    students = {role: f"{prefix}-{role}" for role in SAMPLES}
    made_group = subprocess.run(["getent", "group", hubctl.staff_group()],
                                capture_output=True).returncode != 0
    created = []
    try:
        for user in [instructor, *students.values()]:
            hubctl.create_user(user)
            created.append(user)
        yield instructor, students
    finally:
        for user in created:
            stop_processes_of(user)
            hubctl.remove_user(user)
        if made_group:
            subprocess.run(["groupdel", hubctl.staff_group()], capture_output=True)


def stop_processes_of(user: str) -> None:
    """Whatever the test's users still run (servers, kernels), by process id."""
    uid = hubctl.pwd.getpwnam(user).pw_uid
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)


@contextlib.contextmanager
def running_hub(hub: Path):
    command, env = hubctl.hub_command(hub)
    ports = {"PORT": free_port(), "HUB_PORT": free_port(), "API_PORT": free_port()}
    env.update({f"MLMCOURSE_HUB_{name}": str(value) for name, value in ports.items()})
    env["MLMCOURSE_HUB_PASSWORD"] = PASSWORD
    log_path = hub / "jupyterhub.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=hub / "state", env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{ports['PORT']}"
        try:
            wait_for(f"{url}/hub/login", process, log_path)
            yield url
        finally:
            lab.stop_server(process)  # the hub stops the users' servers and the proxy


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
        with class_users(prefix) as (instructor, students):
            hubctl.setup(hub, instructor, list(students.values()), notebooks=[NOTEBOOK])
            with running_hub(hub) as url, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(lab.CHROMIUM),
                                                     args=lab.CHROMIUM_ARGS, headless=True)
                try:
                    yield Term(url, hub, instructor, students, browser)
                finally:
                    browser.close()
    finally:
        shutil.rmtree(hub, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Logging in, and the nbgrader panels of JupyterLab.

def begin_log_in(term: Term, user: str):
    """A browser of the user's own, logging in; the hub then starts the user's JupyterLab
    (several users' servers start at once while the test goes on with another)."""
    context = term.browser.new_context(viewport=lab.VIEWPORT, device_scale_factor=1)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(f"{term.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", PASSWORD)
    page.click("#login_submit", no_wait_after=True)
    return page


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


def formgrader(term: Term, page) -> None:
    """The formgrader's Manage Assignments page, once its table has loaded."""
    page.goto(f"{term.base(term.instructor)}/formgrader/")
    page.locator(f"tbody td.name:has-text('{ASSIGNMENT}')").wait_for()


def press(page, selector: str, timeout: float = 300_000) -> str:
    """A formgrader button; waits for its result dialog and returns its text (fails on error)."""
    page.locator(selector).first.click()
    outcome = page.locator("#success-modal.in, #error-modal.in")
    outcome.wait_for(state="visible", timeout=timeout)
    text = outcome.inner_text()
    assert outcome.get_attribute("id") == "success-modal", f"{selector}: {text[-3000:]}"
    return text


def assignment_row(action: str) -> str:
    return f"tr:has(td.name:has-text('{ASSIGNMENT}')) td.{action} a"


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
    formgrader(term, page)
    shoot(page, "02-instructor-formgrader-draft")
    press(page, assignment_row("assign"))
    formgrader(term, page)
    press(page, assignment_row("release"))
    formgrader(term, page)
    page.locator(f"tr:has(td.name:has-text('{ASSIGNMENT}')) .label-success").wait_for()
    shoot(page, "03-instructor-released")


def fetch(page, who: str) -> None:
    """The Assignment List's Fetch button (the course's only released assignment)."""
    assignment_list(page)
    page.get_by_role("button", name="Fetch", exact=True).click()
    page.get_by_role("button", name="Submit", exact=True).wait_for()
    shoot(page, f"04-{who}-fetched")


def write_answer(term: Term, page, user: str, answer: str) -> Path:
    """Type the answer into the fetched notebook and save it (what the student hands in)."""
    relative = f"{ASSIGNMENT}/{NOTEBOOK}.ipynb"
    work = hubctl.home(user) / relative
    index = next(i for i, cell in enumerate(nbio.read(work).cells)
                 if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ANSWER)
    lab.open_notebook(page, term.base(user), relative)
    lab.set_cell_source(page, index, answer)
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while nbio.read(work).cells[index].source != answer:
        assert time.monotonic() < deadline, f"{user}: the notebook was not saved"
        time.sleep(0.3)
    return work


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
    dialog.wait_for(timeout=240_000)
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


def grade_and_release_feedback(term: Term, page) -> None:
    """Collect, the Autograde button of each submission, generate and release feedback."""
    formgrader(term, page)
    press(page, assignment_row("collect"))
    for user in term.students.values():
        page.goto(f"{term.base(term.instructor)}/formgrader/manage_submissions/{ASSIGNMENT}")
        row = page.locator("tbody tr", has=page.locator(
            "td.student-id", has_text=re.compile(f"^{user}$")))
        row.locator("td.autograde a").click()
        outcome = page.locator("#success-modal.in, #error-modal.in")
        outcome.wait_for(state="visible", timeout=300_000)
        assert outcome.get_attribute("id") == "success-modal", outcome.inner_text()[-3000:]
    page.goto(f"{term.base(term.instructor)}/formgrader/manage_submissions/{ASSIGNMENT}")
    page.locator("tbody td.score").first.wait_for()
    shoot(page, "08-instructor-autograded")
    formgrader(term, page)
    press(page, assignment_row("generate-feedback"))
    formgrader(term, page)
    press(page, assignment_row("release-feedback"))
    page.wait_for_timeout(500)  # the dialog fades in
    shoot(page, "09-instructor-feedback-released")


def read_feedback(term: Term, page, user: str, who: str) -> str:
    """Fetch feedback in the Assignment List and open it; returns the page's text."""
    assignment_list(page)
    page.get_by_role("button", name="Fetch Feedback").click()
    page.get_by_text("(view feedback)").wait_for()
    [html] = (hubctl.home(user) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html")
    relative = html.relative_to(hubctl.home(user)).as_posix()
    page.goto(f"{term.base(user)}/files/{relative}")
    page.wait_for_load_state("load")
    shoot(page, f"10-{who}-feedback")
    return page.locator("body").inner_text()


def gradebook_scores(term: Term) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{term.course / 'gradebook.db'}") as gradebook:
        return {user: (nb.score, nb.max_score) for user in term.students.values()
                for nb in [gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, user)]}


def can_read(user: str, path: Path) -> bool:
    """Whether `user` can read the file or list the folder (asked as that user)."""
    command = ["ls", str(path)] if path.is_dir() else ["head", "-c1", str(path)]
    return subprocess.run(["runuser", "-u", user, "--", *command],
                          capture_output=True).returncode == 0


def inbound_copies(term: Term, user: str) -> list[Path]:
    inbound = term.hub / "exchange" / hubctl.COURSE_ID / "inbound"
    return sorted(inbound.glob(f"{user}+{ASSIGNMENT}+*/{NOTEBOOK}.ipynb"))


def marker_files(term: Term) -> list[Path]:
    homes = [hubctl.home(u) for u in [term.instructor, *term.students.values()]]
    return [p for folder in [term.hub, *homes] for p in folder.rglob("HACKED_BY_*")]


def test_a_whole_term_on_the_hub(term):
    shutil.rmtree(SHOTS, ignore_errors=True)  # this run's screenshots only
    start = time.monotonic()
    lap = lambda name: term.times.__setitem__(name, time.monotonic() - start)  # noqa: E731
    pages = {user: begin_log_in(term, user) for user in [term.instructor, *term.students.values()]}
    prof = pages[term.instructor]
    wait_for_lab(prof, term.instructor)
    assert nbgrader_menu(prof) == ["nbgrader:open-assignment-list", "nbgrader:open-course-list",
                                   "nbgrader:open-create-assignment", "nbgrader:open-formgrader"]
    shoot(prof, "01-instructor-lab")
    lap("instructor's JupyterLab open")
    release(term, prof)
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
    for user in term.students.values():  # the three press Validate at about the same time
        press_validate(pages[user])
    handed_in: dict[str, str] = {}
    for role, user in term.students.items():
        page = pages[user]
        kind, text, seconds = validate_result(page)
        term.times[f"Validate, {role} answer"] = seconds
        shoot(page, f"06-{role}-validate")
        # Honest: the right answer passes; the wrong one breaks a visible check, and so does
        # the hostile one, whose answer hard-codes -100 (a graded cell's public part catches it).
        assert kind == VALIDATE_SAYS[role][0], f"{role}: {text[:2000]}"
        assert VALIDATE_SAYS[role][1] in text, f"{role}: {text[:2000]}"
        close_dialog(page)
        submit(page, role)
        handed_in[user] = digest(work[user])
    lap("validated and submitted")

    for user in term.students.values():
        others = [hubctl.home(u) for u in term.students.values() if u != user]
        for path in [term.course / "source", term.course / "gradebook.db",
                     term.course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
                     hubctl.home(term.instructor), *others,
                     term.hub / "exchange" / hubctl.COURSE_ID / "inbound"]:
            assert not can_read(user, path), f"student {user} can read {path}"

    grade_and_release_feedback(term, prof)
    lap("graded, feedback released")
    scores = gradebook_scores(term)
    for role, user in term.students.items():
        assert scores[user] == (expected_points(role), 24), f"{role}: {scores[user]}"
        copies = [*inbound_copies(term, user),
                  term.course / "submitted" / user / ASSIGNMENT / f"{NOTEBOOK}.ipynb"]
        assert len(copies) == 2 and {digest(p) for p in copies} == {handed_in[user]}, (
            f"{role}: a submitted file differs from what the student handed in")
    assert not marker_files(term), "the hostile student wrote next to somebody's files"
    assert {p: digest(p) for p in protected} == protected, "the instructor's files changed"

    for role, user in term.students.items():
        text = read_feedback(term, pages[user], user, role)
        got = expected_points(role)
        assert re.search(rf"\b{got:g}(\.0+)? / 24\b", text), f"{role} reads no {got:g} / 24"
    lap("whole term")
    SHOTS.mkdir(parents=True, exist_ok=True)
    report = "".join(f"{name}: {seconds:.1f} s\n" for name, seconds in term.times.items())
    (SHOTS / "times.txt").write_text(report)
    print(report)
