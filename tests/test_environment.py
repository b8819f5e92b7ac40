"""The environment is pinned once, and every way of creating it agrees."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT


def pins(lines) -> dict[str, str]:
    found = {}
    for line in lines:
        match = re.match(r"^\s*-?\s*([A-Za-z0-9_.\-]+)\s*==?\s*([0-9][^\s#;]*)", line)
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def constraints() -> dict[str, str]:
    return pins((ROOT / "requirements" / "constraints.txt").read_text().splitlines())


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    assert constraints()["torch"] == "2.13.0"


def test_requirements_only_name_pinned_packages():
    pinned = constraints()
    for name in sorted(p.name for p in (ROOT / "requirements").glob("*.txt")):
        if name == "constraints.txt":
            continue
        listed = pins((ROOT / "requirements" / name).read_text().splitlines())
        for package, version in listed.items():
            assert pinned.get(package) == version, f"{name}: {package}=={version} vs constraints"


def test_environment_yml_agrees_with_constraints():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(d.startswith("python=3.11") for d in conda)
    declared = {**pins(conda), **pins(pip)}
    pinned = constraints()
    assert "torch" in declared and "nbgrader" in declared and "jupyterlab" in declared
    for package, version in declared.items():
        if package in ("python", "pip"):
            continue
        assert pinned.get(package) == version, (
            f"environment.yml pins {package}={version}, constraints.txt {pinned.get(package)}"
        )


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
