"""The hub's LTI mode (course.json "auth": "lti"), without a hub: the authenticator and its
traits from lti.json, the launch's groups, and a Learner never staff (tests/test_hub_config.py's
way: the configuration loaded on a made-up hub folder)."""

from __future__ import annotations

import json
import runpy

import pytest
from lms_platform import ROLES
from test_hub_config import DEPLOY, Spawner, containers_module, hub_config
from traitlets.config import Config

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
LTI = {"issuer": "https://lms.example", "client_id": "tool-1", "deployment_id": "dep-1",
       "context_id": "course-1",
       "authorize_url": "https://lms.example/auth", "jwks_url": "https://lms.example/jwks",
       "token_url": "https://lms.example/token", "lineitem_url": "https://lms.example/li/1",
       "key_folder": "keys"}


def lti_hub_config(tmp_path, monkeypatch, spawner="containers", lti=LTI,
                   course: dict | None = None) -> Config:
    (tmp_path / "course").mkdir(parents=True)
    hub_config(tmp_path, monkeypatch)  # course.json's first version and state/
    course = {**json.loads((tmp_path / "course.json").read_text()), **(course or {})}
    course.update(auth="lti", spawner=spawner, image="localhost/mlmcourse:test", network={
        "name": "mlmcourse-0123abcd", "subnet": "10.89.65.0/24", "gateway": "10.89.65.1"},
        container_uid=containers_module().choose_user_id())
    (tmp_path / "course.json").write_text(json.dumps(course))
    (tmp_path / "state" / "lti.json").write_text(json.dumps(lti))
    config = Config()
    runpy.run_path(str(DEPLOY / "jupyterhub_config.py"), {"get_config": lambda: config})
    return config


def launch(sub: str, *roles: str, deployment: str = "dep-1", context: str = "course-1",
           kind: str = "LtiResourceLinkRequest") -> dict:
    import time
    import uuid

    claims = {"sub": sub, "name": f"Name of {sub}", "email": f"{sub}@school.example",
              ROLES_CLAIM: [ROLES[r] for r in roles], DEPLOYMENT: deployment,
              "nonce": uuid.uuid4().hex, "iat": int(time.time()),
              "https://purl.imsglobal.org/spec/lti/claim/context": {"id": context},
              "https://purl.imsglobal.org/spec/lti/claim/message_type": kind,
              "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "link-1"},
              "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
                  "lineitem": "https://lms.example/li/7", "scope": []}}
    return {"name": sub, "auth_state": claims}


def test_lti_mode_configures_the_lti13_authenticator_from_lti_json(tmp_path, monkeypatch):
    c = lti_hub_config(tmp_path, monkeypatch)
    from ltiauthenticator.lti13.auth import LTI13Authenticator

    assert issubclass(c.JupyterHub.authenticator_class, LTI13Authenticator)
    auth = c.LTI13Authenticator
    assert (auth.issuer, auth.client_id) == ("https://lms.example", {"tool-1"})
    assert (auth.authorize_url, auth.jwks_endpoint) == ("https://lms.example/auth",
                                                        "https://lms.example/jwks")
    assert auth.username_key == "sub" and auth.manage_groups is True
    assert "PAMAuthenticator" not in c
    assert LTI13Authenticator.class_traits()["manage_groups"]


def test_a_running_hub_takes_changed_lti_settings_at_the_next_launch(tmp_path, monkeypatch):
    """`hubctl.py lti` replaces state/lti.json: the login pages and the course's checks read
    it again (no restart); a broken file later keeps the last good values."""
    import os

    c = lti_hub_config(tmp_path, monkeypatch)
    monkeypatch.setattr(__import__("lti_auth"), "learn", lambda *args: None)
    authenticator = c.JupyterHub.authenticator_class()
    authenticator.take({**LTI, "issuer": "https://old.example"})
    assert run_hook(c, launch("ann", "Learner", context="course-1"))[0]["name"] == "lti-ann"
    settings = tmp_path / "state" / "lti.json"
    settings.write_text(json.dumps({**LTI, "context_id": "course-2",
                                    "jwks_url": "https://lms.example/jwks-2"}))
    os.utime(settings, ns=(1, 1))  # (a new mtime, whatever the clock's resolution)
    from tornado.web import HTTPError

    with pytest.raises(HTTPError, match="not this course's 'course-2'"):
        run_hook(c, launch("ann", "Learner", context="course-1"))
    assert run_hook(c, launch("ann", "Learner", context="course-2"))[0]["name"] == "lti-ann"
    authenticator.refresh()  # (what the login and callback pages do first)
    assert authenticator.jwks_endpoint == "https://lms.example/jwks-2"
    assert authenticator.issuer == "https://lms.example"
    settings.write_text("{broken")
    os.utime(settings, ns=(2, 2))
    assert run_hook(c, launch("bo", "Learner", context="course-2"))[0]["name"] == "lti-bo"


def test_pam_stays_the_default(tmp_path, monkeypatch):
    assert hub_config(tmp_path, monkeypatch).JupyterHub.authenticator_class == "pam"


def run_hook(c, claims: dict):
    """The post-auth hook as the hub runs it (a coroutine), with a log that keeps warnings."""
    import asyncio

    warnings = []
    log = type("Log", (), {"warning": lambda _, f, *a: warnings.append(f % a)})()
    auth = type("Auth", (), {"log": log})()
    return asyncio.run(c.Authenticator.post_auth_hook(auth, None, claims)), warnings


def test_roles_map_to_the_course_groups_on_every_launch(tmp_path, monkeypatch):
    from tornado.web import HTTPError

    c = lti_hub_config(tmp_path, monkeypatch)
    import ngshare_roster

    db_url = f"sqlite:///{tmp_path / 'state' / 'ngshare.sqlite'}"
    ngshare_roster.prepare(db_url, str(tmp_path / "state" / "files"))
    student, _ = run_hook(c, launch("ann", "Learner"))
    assert student["groups"] == ["bert_mlm_course-students"] and student["name"] == "lti-ann"
    teacher, _ = run_hook(c, launch("dan", "Instructor"))
    assert teacher["groups"] == ["bert_mlm_course-staff"]
    # the same person, a Learner now in the LMS: a student on this launch
    assert run_hook(c, launch("dan", "Learner"))[0]["groups"] == ["bert_mlm_course-students"]
    with pytest.raises(HTTPError, match="deployment 'other'"):
        run_hook(c, launch("eve", "Learner", deployment="other"))
    users = json.loads((tmp_path / "state" / "lti-users.json").read_text())
    assert users["lti-ann"] == {"sub": "ann", "name": "Name of ann",
                                "email": "ann@school.example", "staff": False}
    # ... and the line item its link's scores go to (passback needs no lineitem_url)
    links = json.loads((tmp_path / "state" / "lti-links.json").read_text())
    assert links == {"link-1": {"lineitem": "https://lms.example/li/7", "title": ""}}
    # the exchange learns the class from the launches, names and e-mail with it (the gradebook
    # takes them at the staff's collect); the hub writes nothing in the staff's course folder
    with ngshare_roster.course_session(db_url, "bert_mlm_course") as (db, course):
        assert sorted(u.id for u in course.students) == ["lti-ann", "lti-dan"]
        assert [u.id for u in course.instructors] == []
        from ngshare.database import StudentAssociation

        ann = StudentAssociation.find(db, course.students[0], course)
        assert (ann.first_name, ann.last_name, ann.email) == ("Name", "of ann",
                                                               "ann@school.example")
    assert list((tmp_path / "course").iterdir()) == []


def test_a_launch_is_accepted_once(tmp_path, monkeypatch):
    """LTI13Authenticator checks the nonce against its state cookie; the course also remembers
    every nonce for the token's max age, so a launch posted again is refused."""
    from tornado.web import HTTPError

    c = lti_hub_config(tmp_path, monkeypatch)
    import lti_auth

    nonces = lti_auth.UsedNonces(max_age=600)
    nonces.use("n-1", now=1000.0)
    with pytest.raises(lti_auth.LaunchRefused, match="used already"):
        nonces.use("n-1", now=1500.0)
    nonces.use("n-1", now=1700.0)  # past max_age the authenticator refuses the token itself
    with pytest.raises(lti_auth.LaunchRefused):
        nonces.use(None)
    monkeypatch.setattr(lti_auth, "learn", lambda *args: None)
    claims = launch("ann", "Learner")
    claims["auth_state"]["nonce"] = "only-once"
    assert run_hook(c, claims)[0]["name"] == "lti-ann"
    with pytest.raises(HTTPError, match="used already"):
        run_hook(c, claims)


def test_a_launch_from_another_course_or_a_content_picker_is_refused(tmp_path, monkeypatch):
    """A tool placed for the whole school sends one deployment from every course: a student
    who teaches a sandbox course is no staff here, and a Deep Linking request is no launch."""
    from tornado.web import HTTPError

    c = lti_hub_config(tmp_path, monkeypatch)
    import lti_auth

    monkeypatch.setattr(lti_auth, "learn", lambda *args: None)
    with pytest.raises(HTTPError, match="LMS course \\(context\\) 'sandbox-9'"):
        run_hook(c, launch("eve", "Instructor", context="sandbox-9"))
    with pytest.raises(HTTPError, match="LtiDeepLinkingRequest"):
        run_hook(c, launch("eve", "Instructor", kind="LtiDeepLinkingRequest"))
    teaches_elsewhere = launch("eve", "Learner")
    teaches_elsewhere["auth_state"][ROLES_CLAIM] = [
        "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"]
    assert run_hook(c, teaches_elsewhere)[0]["groups"] == ["bert_mlm_course-students"]


def test_admins_are_set_on_every_launch_and_a_new_role_stops_the_old_server(tmp_path,
                                                                            monkeypatch):
    import asyncio

    course = {"admins": ["lti-dan"]}
    c = lti_hub_config(tmp_path, monkeypatch, course=course)
    import lti_auth

    monkeypatch.setattr(lti_auth, "learn", lambda *args: None)
    assert run_hook(c, launch("dan", "Instructor"))[0]["admin"] is True
    assert run_hook(c, launch("ann", "Learner"))[0]["admin"] is False
    stopped = []

    class Handler:  # the hub's handler, with a TA's server running
        log = type("Log", (), {"warning": lambda *a: None})()

        pending = None

        def find_user(self, name):
            group = type("Group", (), {"name": "bert_mlm_course-staff"})()
            spawner = type("Spawner", (), {"active": True, "pending": self.pending})()
            return type("User", (), {"name": name, "groups": [group], "spawner": spawner})()

        async def stop_single_user(self, user):
            stopped.append(user.name)

    hook = c.Authenticator.post_auth_hook
    auth = type("Auth", (), {"log": Handler.log})()
    asyncio.run(hook(auth, Handler(), launch("dan", "Instructor")))
    assert stopped == []  # still staff: the server stays
    asyncio.run(hook(auth, Handler(), launch("dan", "Learner")))
    assert stopped == ["lti-dan"]  # a student now: the staff server stops
    from tornado.web import HTTPError

    Handler.pending = True  # ... unless it is starting or stopping: launch again
    with pytest.raises(HTTPError, match="open the assignment again"):
        asyncio.run(hook(auth, Handler(), launch("dan", "Learner")))


def test_a_hub_name_of_another_lms_user_is_refused(tmp_path):
    from mlmcourse.lms.launch import LaunchRefused, record_launch

    record_launch(tmp_path, "lti-ann", {"sub": "ann"})
    with pytest.raises(LaunchRefused, match="another LMS user"):
        record_launch(tmp_path, "lti-ann", {"sub": "ANN-with-a-colliding-name"})


def test_a_learner_never_gets_a_staff_server(tmp_path, monkeypatch):
    c = lti_hub_config(tmp_path, monkeypatch)
    # the launch's hub group alone decides: there is no Unix staff group in LTI mode
    for name, groups, role in (("lti-ann", ["bert_mlm_course-students"], "student"),
                               ("lti-dan", ["bert_mlm_course-staff"], "instructor"),
                               ("lti-eve", [], "student")):
        spawner = Spawner(name, groups)
        c.Spawner.pre_spawn_hook(spawner)
        assert spawner.environment["JUPYTER_CONFIG_DIR"] == f"/opt/course/roles/{role}", name
        staff_folder = str(tmp_path / "course") in spawner.volumes
        assert staff_folder == (role == "instructor"), f"{name} and the course folder"
        # a student's first lab opens on the Assignment List (JupyterLab's default workspace)
        first_view = tmp_path / "homes" / name / ".jupyter/lab/workspaces"
        assert first_view.is_dir() == (role == "student"), name


def test_lti_mode_refuses_the_local_spawner_and_a_short_lti_json(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="containers spawner"):
        lti_hub_config(tmp_path / "local", monkeypatch, spawner="local")
    with pytest.raises(SystemExit, match="lacks jwks_url"):
        lti_hub_config(tmp_path / "short", monkeypatch, lti={**LTI, "jwks_url": ""})
    with pytest.raises(SystemExit, match="deployment_id as JSON strings"):
        lti_hub_config(tmp_path / "number", monkeypatch, lti={**LTI, "deployment_id": 1})


# LTI13Authenticator's own checks of a launch's id_token, in process, against the simulated
# platform's JWKS endpoint (the browser flow, its state cookie and nonce, is the hub term's).

def validate(lms, token: str) -> dict:
    from ltiauthenticator.lti13.validator import LTI13LaunchValidator

    validator = LTI13LaunchValidator()
    claims = validator.verify_and_decode_jwt(
        encoded_jwt=token, issuer=lms.issuer, audience={lms.client_id},
        jwks_endpoint=f"{lms.url}/jwks", jwks_algorithms=["RS256"])
    validator.validate_id_token(claims)
    return claims


def test_the_authenticator_refuses_forged_expired_and_wrong_audience_launches():
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from lms_platform import SimulatedPlatform
    from ltiauthenticator.lti13.error import InvalidAudienceError, TokenError

    with SimulatedPlatform({"keys": []}) as lms:
        assert validate(lms, lms.launch_token("ann"))["sub"] == "ann"
        with pytest.raises(InvalidAudienceError, match="(?i)audience"):
            validate(lms, lms.launch_token("ann", audience="another-tool"))
        with pytest.raises(TokenError, match="(?i)expired"):
            validate(lms, lms.launch_token("ann", expires_in=-3600))
        claims = jwt.decode(lms.launch_token("ann", role="Instructor"),
                            options={"verify_signature": False})
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = jwt.encode(claims, other, algorithm="RS256", headers={"kid": "platform-1"})
        with pytest.raises(TokenError, match="(?i)signature"):
            validate(lms, forged)


def test_hubctl_lti_checks_and_replaces_the_hubs_lti_json(tmp_path, monkeypatch):
    """`hubctl.py lti FILE`: the LMS's new values, checked (no line item needed), into the
    hub's state/ beside its records, the key kept; a PAM hub or a short file is refused."""
    import os
    import stat

    if os.geteuid() != 0:
        pytest.skip("hubctl runs as root")
    hubctl = __import__("runpy").run_path(str(DEPLOY / "hubctl.py"))
    (tmp_path / "state").mkdir()
    (tmp_path / "course.json").write_text(json.dumps({"auth": "lti", "spawner": "containers"}))
    given = tmp_path / "new.json"
    given.write_text(json.dumps({k: v for k, v in LTI.items() if k != "lineitem_url"}))
    assert "takes them when it starts" in hubctl["change_lti"](tmp_path, given)
    settings = json.loads((tmp_path / "state" / "lti.json").read_text())
    assert settings["key_folder"] == "lti-keys" and "lineitem_url" not in settings
    assert stat.S_IMODE((tmp_path / "state" / "lti.json").stat().st_mode) == 0o600
    key = (tmp_path / "state" / "lti-keys" / "tool-private.pem").read_bytes()
    hubctl["change_lti"](tmp_path, given)
    assert (tmp_path / "state" / "lti-keys" / "tool-private.pem").read_bytes() == key
    given.write_text(json.dumps({**LTI, "jwks_url": ""}))
    with pytest.raises(hubctl["HubError"], match="lacks jwks_url"):
        hubctl["change_lti"](tmp_path, given)
    (tmp_path / "course.json").write_text(json.dumps({"auth": "pam"}))
    with pytest.raises(hubctl["HubError"], match="Unix passwords"):
        hubctl["change_lti"](tmp_path, given)


def test_make_hub_starts_the_hub_set_up_last(tmp_path, monkeypatch):
    hubctl = __import__("runpy").run_path(str(DEPLOY / "hubctl.py"))
    default_hub, remember = hubctl["default_hub"], hubctl["remember_hub"]
    monkeypatch.setitem(default_hub.__globals__, "LAST_HUB", tmp_path / "hub-folder")
    monkeypatch.delenv("MLMCOURSE_HUB_DIR", raising=False)
    assert str(default_hub()) == "/srv/mlmcourse-hub"
    remember(tmp_path / "section2")
    assert default_hub() == tmp_path / "section2"
    monkeypatch.setenv("MLMCOURSE_HUB_DIR", "/srv/other")
    assert str(default_hub()) == "/srv/other"
