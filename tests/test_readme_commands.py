"""Every `make` command the README names is a target of the Makefile whose recipe runs a command
the suite exercises: `python -m mlmcourse <subcommand>` (a subcommand the CLI has) or the hub's
`hubctl.py`. A dry run (`make -n`) shows the recipe without running it; the environment's own
steps are taken as done (`-o`), so only the command itself is printed.

Where each command runs for real: `lab` (tests/test_lab.py, the browser labs), `check`
(test_self_check_any_name.py), `site` (browser/test_browser_site.py), `new-class` and `grade`
on a class (test_new_class.py), `hub` (test_hub.py), `bench` (test_bench_smoke.py), `test`
(CI's `bash .ci/run` itself).
"""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import ROOT

from mlmcourse.cli import parser

MAKE_COMMAND = re.compile(r"(?<![\w-])make ([a-z][a-z-]*)((?: [A-Z_]+=[^\s`]+)*)")
# Taken as done: the environment and the hub's proxy (make's own prerequisites).
PREREQUISITES = [".venv/.installed-course", ".venv/.installed-dev", ".venv/.installed-hub",
                 "build/node/node_modules/.bin/configurable-http-proxy"]
NOT_DRY_RUN = {"test"}  # its recipe starts make again (the image in the background): CI runs it


def readme_make_commands() -> dict[str, str]:
    """{target: its variables as the README writes them}, for every `make` command there."""
    text = (ROOT / "README.md").read_text()
    return {target: settings.strip() for target, settings in MAKE_COMMAND.findall(text)}


def cli_subcommands() -> set[str]:
    actions = [a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(actions[0].choices)


def test_the_readme_names_the_commands_this_file_knows():
    assert {"lab", "test", "check", "site", "new-class", "grade", "hub"} <= set(
        readme_make_commands())


@pytest.mark.parametrize("target", sorted(set(readme_make_commands()) - NOT_DRY_RUN))
def test_a_readme_make_command_runs_a_command_the_suite_runs(target, tmp_path):
    settings = readme_make_commands()[target].replace("~/", f"{tmp_path}/").split()
    ignore = [option for path in PREREQUISITES for option in ("-o", path)]
    done = subprocess.run(["make", "-n", *ignore, target, *settings], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"make {target}: {done.stderr}"
    called = re.findall(r"python -m mlmcourse ([a-z-]+)|hub/(hubctl)\.py", done.stdout)
    assert called, f"make {target} runs no course command:\n{done.stdout}"
    for subcommand, hubctl in called:
        assert hubctl or subcommand in cli_subcommands(), (
            f"make {target} runs `python -m mlmcourse {subcommand}`, which the CLI lacks")
