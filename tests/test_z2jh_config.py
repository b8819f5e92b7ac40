"""The course's Zero to JupyterHub configuration (deploy/kubernetes/config.yaml), checked as helm
checks it: the chart's defaults (values.yaml) deep-merged with the course's values, validated
against the chart's own values.schema.yaml (reference copies in ../shared/reference/z2jh/, chart
5.5.0). No cluster runs here; what this checks is that helm would accept the values and that
they say what the course needs (README "Deployment: Kubernetes")."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

CONFIG = ROOT / "deploy" / "kubernetes" / "config.yaml"
GRADING = ROOT / "deploy" / "kubernetes" / "grading.yaml"


def reference() -> Path:
    """../shared/reference/z2jh/ beside the repository (MLMCOURSE_Z2JH_REFERENCE elsewhere)."""
    candidates = [Path(os.environ.get("MLMCOURSE_Z2JH_REFERENCE", "/nonexistent")),
                  *(parent / "shared" / "reference" / "z2jh" for parent in ROOT.parents)]
    for folder in candidates:
        if (folder / "values.schema.yaml").is_file():
            return folder
    pytest.skip("the chart's values.yaml and values.schema.yaml are not here "
                "(../shared/reference/z2jh/ or MLMCOURSE_Z2JH_REFERENCE)")


def merge(defaults, values):
    """Helm's merge of a values file over the chart's defaults: maps merge key by key, anything
    else (lists, strings, numbers) replaces; a null removes the default's key."""
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return copy.deepcopy(values)
    merged = copy.deepcopy(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged:
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@pytest.fixture(scope="module")
def values() -> dict:
    folder = reference()
    defaults = yaml.safe_load((folder / "values.yaml").read_text())
    return merge(defaults, yaml.safe_load(CONFIG.read_text()))


def test_the_course_config_validates_against_the_charts_schema(values):
    import jsonschema

    schema = yaml.safe_load((reference() / "values.schema.yaml").read_text())
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(values), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_the_schema_check_catches_a_wrong_key(values):
    """(the check itself works: a misspelt key of the course's config is refused)"""
    import jsonschema

    schema = yaml.safe_load((reference() / "values.schema.yaml").read_text())
    broken = merge(values, {"singleuser": {"memmory": {"limit": "2G"}}})
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))


def test_the_config_says_what_the_course_needs(values):
    single = values["singleuser"]
    assert single["image"]["name"].endswith("/mlmcourse/course") and single["uid"] == 1000
    assert values["hub"]["config"]["JupyterHub"]["authenticator_class"] == "generic-oauth"
    profiles = {p["slug"]: p["kubespawner_override"] for p in single["profileList"]}
    assert set(profiles) == {"student", "staff"}
    assert profiles["student"]["environment"]["JUPYTER_CONFIG_DIR"].endswith("/roles/student")
    assert "volumes" not in profiles["student"], "students must not mount the course folder"
    assert "extra_container_config" not in profiles["student"]
    assert profiles["staff"]["volume_mounts"][0]["mountPath"] == (
        "/home/jovyan/" + single["extraEnv"]["MLMCOURSE_COURSE_ID"])
    sandbox = profiles["staff"]["extra_container_config"]["securityContext"]
    assert sandbox["seccompProfile"]["type"] == "Unconfined" and "privileged" not in sandbox
    assert single["extraEnv"]["MLMCOURSE_NGSHARE_URL"].startswith(
        values["hub"]["services"]["ngshare"]["url"])
    assert values["cull"]["enabled"] and values["cull"]["timeout"] == 3600
    assert single["memory"]["limit"] and single["cpu"]["limit"]
    # the profiles are picked by hub group in extraConfig: the snippet at least compiles
    for name, code in values["hub"]["extraConfig"].items():
        compile(code, name, "exec")


def test_the_grading_workers_run_the_same_image_with_the_sandboxes_rights():
    documents = [d for d in yaml.safe_load_all(GRADING.read_text()) if d]
    assert {d["kind"] for d in documents} == {"PersistentVolumeClaim", "Service", "Deployment"}
    config = yaml.safe_load(CONFIG.read_text())["singleuser"]["image"]
    image = f"{config['name']}:{config['tag']}"
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in documents
            if d["kind"] == "Deployment"}
    for pod in pods.values():
        assert [c["image"] for c in pod["containers"]] == [image]
    worker = pods["mlmcourse-grading-workers"]
    assert worker["hostUsers"] is False
    rights = worker["containers"][0]["securityContext"]
    assert rights["seccompProfile"]["type"] == "Unconfined" and "privileged" not in rights
