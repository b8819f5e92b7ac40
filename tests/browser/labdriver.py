"""Drive JupyterLab in Debian's Chromium: a server on a course copy, a browser, notebook actions.

Shared by the browser tests (a helper module, not a conftest: the top-level `conftest` module
name is taken). Each test module starts one JupyterLab server with `serve_lab` and one browser
with `chromium_page`, and stops both by their process ids when the module is done.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, course_env, free_port

from mlmcourse.lab import TA, lab_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTALL_HINT = (
    "the browser tests need Debian's Chromium: run `apt-get install -y chromium` "
    "(as root; .ci/run does this), then run them again"
)
SCREENSHOTS = ROOT / "build" / "screenshots"
VIEWPORT = {"width": 1280, "height": 900}

# JupyterLab user settings pinned for the tests (a fresh JUPYTERLAB_SETTINGS_DIR per server):
# - every cell is attached to the DOM (the default windowing mode detaches cells out of view, so
#   a locator could miss a cell or its outputs);
# - no news or update checks: they would ask the user in a toast that covers the notebook.
PINNED_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

RUN_ALL = "runmenu:run-all"


def write_pinned_settings(folder: Path, pinned: dict | None = None) -> Path:
    for name, values in (PINNED_SETTINGS if pinned is None else pinned).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2) + "\n")
    return folder


def lab_env(course: Path, scratch: Path, pinned: dict | None = None) -> dict[str, str]:
    """The course's environment, with JupyterLab's user state kept out of the home folder.

    `pinned`: the user settings to start with (default: PINNED_SETTINGS)."""
    env = course_env(course)
    settings = write_pinned_settings(scratch / "lab-settings", pinned)
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(scratch / "lab-workspaces")  # no restored tabs
    env["JUPYTER_CONFIG_DIR"] = str(scratch / "jupyter-config")  # no user config from ~/.jupyter
    env["JUPYTER_RUNTIME_DIR"] = str(scratch / "jupyter-runtime")
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    return env


@contextlib.contextmanager
def serve_lab(course: Path, scratch: Path, role: str = TA,
              pinned: dict | None = None) -> Iterator[str]:
    """JupyterLab on 127.0.0.1 with an empty token, run from the course root; yields its URL.

    `role`: whose lab (`mlmcourse.lab`): the TA's serves the whole course, the student's `work/`;
    `pinned`: the user settings it starts with (default: PINNED_SETTINGS)."""
    scratch.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = lab_command(course, port, open_browser=False, role=role) + NO_LOGIN
    # cwd: nbgrader's Validate and formgrader read nbgrader_config.py from there.
    with _serve(command, course, lab_env(course, scratch, pinned), scratch, port) as url:
        yield url


@contextlib.contextmanager
def serve_home(home: Path, scratch: Path) -> Iterator[str]:
    """JupyterLab as a hub starts it for a student: served from and run in the student's home
    (HOME too), no course nbgrader_config.py anywhere near; yields its URL."""
    import sys

    scratch.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [sys.executable, "-m", "jupyterlab", "--ip=127.0.0.1", "--no-browser",
               f"--port={port}", f"--ServerApp.root_dir={home}", *NO_LOGIN]
    if os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")
    env = lab_env(ROOT, scratch)
    env["HOME"] = str(home)
    with _serve(command, home, env, scratch, port) as url:
        yield url


NO_LOGIN = ["--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.port_retries=0"]


@contextlib.contextmanager
def _serve(command: list[str], cwd: Path, env: dict, scratch: Path, port: int) -> Iterator[str]:
    """Start a JupyterLab server, wait until it answers, yield its URL, stop it by its pid."""
    log = (scratch / "jupyterlab.log").open("w")
    server = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, server, scratch / "jupyterlab.log")
        yield url
    finally:
        stop_server(server)
        log.close()


def wait_for_server(url: str, server: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if server.poll() is not None:
            tail = log.read_text()[-3000:]
            raise RuntimeError(f"JupyterLab exited ({server.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = log.read_text()[-3000:]
            raise RuntimeError(f"JupyterLab did not answer in {seconds} s:\n{tail}")
        time.sleep(0.3)


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM to the server (it shuts its kernels down), then to its own process group."""
    if server.poll() is None:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):  # a kernel that outlived the server
        os.killpg(server.pid, signal.SIGKILL)


@contextlib.contextmanager
def chromium_page() -> Iterator:
    """A Playwright page in Debian's Chromium; the test is skipped when Chromium cannot start."""
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} not found: {INSTALL_HINT}")
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except Error as err:
            pytest.skip(f"Chromium did not start ({str(err).splitlines()[0]}): {INSTALL_HINT}")
        try:
            context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
            context.set_default_timeout(30_000)
            yield context.new_page()
        finally:
            browser.close()


def shoot(page, name: str, **options) -> Path:
    """Save a screenshot under build/screenshots/ (git-ignored) and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), **options)
    return path


# ---------------------------------------------------------------------------------------------
# Notebook actions in JupyterLab 4 (selectors are JupyterLab's own classes and command ids).

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
KERNEL_IDLE = "/[|] Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.textContent || '')"


def open_notebook(page, base_url: str, relative: str) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is idle."""
    page.goto(f"{base_url}/lab/tree/{relative}")
    page.locator(f"{NOTEBOOK} .jp-Notebook .jp-Cell").first.wait_for()
    wait_for_kernel_idle(page, timeout=90_000)


def wait_for_kernel_idle(page, timeout: float = 60_000) -> None:
    """The status bar says '| Idle' (the toolbar indicator says idle before the kernel exists)."""
    page.wait_for_function(f"() => {KERNEL_IDLE}", timeout=timeout, polling=200)


def cells(page):
    return page.locator(f"{NOTEBOOK} .jp-Notebook > .jp-WindowedPanel-outer .jp-Cell")


def cell(page, index: int):
    return cells(page).nth(index)


def run_command(page, command: str) -> None:
    """Run a JupyterLab command through its main-menu item (what a user clicks)."""
    menu = {RUN_ALL: "Run"}[command]
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
    page.locator(f".lm-Menu-item[data-command='{command}']").first.click()


# How long a test waits for Validate's dialog: Validate runs the whole notebook in a fresh kernel,
# and with a hub term, a fresh build and the course image beside it on two cores, one took over
# four minutes. A wait, not a limit on speed: a Validate that passes sooner ends it sooner.
VALIDATE_WAIT_MS = 600_000


def run_all(page, timeout: float = 180_000) -> None:
    """Run all cells and wait until nothing is queued or running and the kernel is idle."""
    run_command(page, RUN_ALL)
    page.wait_for_function(
        f"""() => {{
            const nb = document.querySelector('{NOTEBOOK}');
            const prompts = [...nb.querySelectorAll('.jp-InputArea-prompt')];
            return !prompts.some(p => p.textContent.includes('*')) && {KERNEL_IDLE};
        }}""",
        timeout=timeout,
        polling=250,
    )


def set_cell_source(page, index: int, source: str) -> None:
    """Replace a code cell's text the way a paste does (no auto-indent, no auto-closed brackets)."""
    editor = cell(page, index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)
    page.keyboard.press("Escape")  # back to command mode


def error_outputs(page, index: int | None = None):
    scope = cell(page, index) if index is not None else page.locator(NOTEBOOK)
    return scope.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")


def execution_count(page, index: int) -> str:
    return cell(page, index).locator(".jp-InputArea-prompt").inner_text().strip()


def validate(page, timeout: float = VALIDATE_WAIT_MS) -> tuple[str, str]:
    """Press nbgrader's Validate button; return 'success' or 'failed' and the dialog's text."""
    page.locator("jp-button.validate-button").click()
    dialog = page.locator(".nbgrader-SuccessDialog, .nbgrader-ErrorDialog")
    dialog.wait_for(timeout=timeout)
    kind = "success" if "nbgrader-SuccessDialog" in dialog.get_attribute("class") else "failed"
    return kind, dialog.inner_text()


def excerpt(text: str, limit: int = 2400) -> str:
    """A dialog's text for an assertion message: its start and its end, where a traceback's
    exception stands (Validate's error dialog shows the whole traceback)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 4]}\n[...]\n{text[-(limit - limit // 4):]}"


def close_dialog(page) -> None:
    page.locator(".jp-Dialog button.jp-Dialog-button").last.click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def http_status(url: str) -> int:
    """The HTTP status a GET of `url` answers (an error status too, not an exception)."""
    import urllib.error

    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
