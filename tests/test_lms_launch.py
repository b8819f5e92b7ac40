"""What the hub takes from an LTI launch: a stable user name, the course's group from the roles
(a Learner never staff), and the record passback reads (from the simulated platform's claims)."""

from __future__ import annotations

import json
import stat

import jwt
from lms_platform import ROLES, SimulatedPlatform

from mlmcourse.lms.launch import course_groups, is_staff, record_launch, user_name
from mlmcourse.lms.passback import read_lti_ids

LEARNER, INSTRUCTOR = ROLES["Learner"], ROLES["Instructor"]
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
PERSON = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"


def claims(*roles: str) -> dict:
    return {"sub": "a1b2", ROLES_CLAIM: list(roles)}


def test_roles_map_to_one_course_group():
    assert course_groups(claims(LEARNER), "bert") == ["bert-students"]
    assert course_groups(claims(INSTRUCTOR), "bert") == ["bert-staff"]
    ta = "http://purl.imsglobal.org/vocab/lis/v2/membership#TeachingAssistant"
    assert course_groups(claims(ta), "bert") == ["bert-staff"]


def test_a_learner_is_never_staff():
    assert not is_staff(claims(LEARNER))
    assert not is_staff(claims())  # no roles claim at all
    assert not is_staff(claims(LEARNER, INSTRUCTOR))  # a student who teaches elsewhere
    assert not is_staff(claims(PERSON + "Student"))
    assert not is_staff({"sub": "x", ROLES_CLAIM: "Instructor"})  # a string, not a list


def test_user_names_come_from_sub_and_are_valid():
    assert user_name("a1b2") == "lti-a1b2"
    odd = user_name("Canvas|User:42/Étudiant")
    assert odd.startswith("lti-canvas-user-") and len(odd) <= 32
    assert odd == user_name("Canvas|User:42/Étudiant")  # stable
    assert user_name("A1B2") != user_name("a1b2")  # case kept apart by the hash
    assert all(c.isalnum() or c == "-" for c in odd)
    # a sub shaped like a hashed name never takes that name
    hashed = user_name("Ann").removeprefix("lti-")
    assert user_name(hashed) != user_name("Ann")


def test_a_launch_is_recorded_for_passback(tmp_path):
    with SimulatedPlatform({"keys": []}) as lms:
        token = lms.launch_token("sub-ann", role="Learner")
        claims_ = jwt.decode(token, lms.key.public_key(), algorithms=["RS256"],
                             audience=lms.client_id)
    record_launch(tmp_path, user_name(claims_["sub"]), claims_)
    path = tmp_path / "lti-users.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entry = json.loads(path.read_text())["lti-sub-ann"]
    assert entry == {"sub": "sub-ann", "name": "Student sub-ann",
                     "email": "sub-ann@school.example", "staff": False}
    assert read_lti_ids(path) == {"lti-sub-ann": "sub-ann"}
