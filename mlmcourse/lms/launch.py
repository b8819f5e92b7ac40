"""What the hub takes from a checked LTI 1.3 launch: the user name (from the stable `sub`, never
the display name), the course's groups from the roles claim (every launch: a role changed in the
LMS changes here next time), and the record of name, e-mail and sub that passback reads.

The hub's LTI mode (deploy/hub/lti_auth.py) calls these from its post_auth_hook; the id_token
itself is checked by LTI13Authenticator before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
MESSAGE_TYPE_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/message_type"
# The course's roles are membership roles (LIS v2), in the launch's context: the principal
# (membership#Instructor) or a sub-role (membership/Instructor#TeachingAssistant). Institution
# and system roles (a student who teaches another course of the school) say nothing of this one.
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
# LIS role names that make a user staff of the course.
STAFF_ROLES = {"Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator"}
RESOURCE_LINK_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
# Beside the tool's lti.json (the hub's state/): who launched, and which line item each link has
USERS_FILE = "lti-users.json"
LINKS_FILE = "lti-links.json"


class LaunchRefused(Exception):
    """A checked id_token the course still turns away; the message says why."""


def user_name(sub: str, prefix: str = "lti-") -> str:
    """A valid, stable Unix and hub user name from the LMS's `sub`: lower-case letters, digits
    and dashes; a long or unusual sub keeps its meaning through a short hash."""
    if not sub:
        raise ValueError("the launch has no sub claim")
    plain = re.sub(r"[^a-z0-9]+", "-", sub.lower()).strip("-")
    digest = hashlib.sha256(sub.encode()).hexdigest()[:8]
    # (the plain form never ends like the hashed one, so no sub can take another's name)
    if plain and len(plain) <= 20 and plain == sub and not re.search(r"-[0-9a-f]{8}$", plain):
        return f"{prefix}{plain}"
    return f"{prefix}{plain[:12].strip('-')}-{digest}" if plain else f"{prefix}{digest}"


def role_names(claims: dict) -> set[str]:
    """The membership roles of the launch's context, by name: 'Instructor' for
    .../membership#Instructor, 'TeachingAssistant' for .../membership/Instructor#TeachingAssistant,
    and the bare short names (LTI 1.1's 'Instructor'); any other vocabulary is left out."""
    roles = claims.get(ROLES_CLAIM)
    if not isinstance(roles, list):  # malformed: no role at all, so a student
        return set()
    names = set()
    for role in roles:
        if not isinstance(role, str):
            continue
        if role.startswith(MEMBERSHIP + "#") or role.startswith(MEMBERSHIP + "/"):
            names.add(role.rpartition("#")[2] or role.rpartition("/")[2])
        elif re.fullmatch(r"[A-Za-z]+", role):
            names.add(role)
    return names


def is_staff(claims: dict) -> bool:
    """Staff only for a membership role of the course's staff; a Learner (any Learner
    sub-role), a Mentor or no role at all is a student (a launch never gets the formgrader by
    default)."""
    roles = claims.get(ROLES_CLAIM) if isinstance(claims.get(ROLES_CLAIM), list) else []
    learner = "Learner" in role_names(claims) or any(
        isinstance(role, str) and role.startswith(f"{MEMBERSHIP}/Learner") for role in roles)
    return bool(role_names(claims) & STAFF_ROLES) and not learner


def check_course_launch(claims: dict, deployment_id: str, context_id: str) -> None:
    """A launch of this course: its deployment, its context (the LMS course the tool is placed
    in: a tool installed for the whole school sends one deployment from every course), and a
    resource link (not a Deep Linking request, a teacher's content picker of any course)."""
    deployment = claims.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id")
    if deployment != deployment_id:
        raise LaunchRefused(f"the launch comes from deployment {deployment!r}, not this "
                            f"course's {deployment_id!r}")
    context = claims.get(CONTEXT_CLAIM)
    launched_in = context.get("id") if isinstance(context, dict) else None
    if launched_in != context_id:
        raise LaunchRefused(f"the launch comes from the LMS course (context) {launched_in!r}, "
                            f"not this course's {context_id!r} (lti.json's context_id)")
    kind = claims.get(MESSAGE_TYPE_CLAIM)
    if kind != "LtiResourceLinkRequest":
        raise LaunchRefused(f"a {kind!r} message is not a launch of the assignment")


def course_groups(claims: dict, course_id: str) -> list[str]:
    """The hub groups of this launch: exactly one of <course>-staff or <course>-students."""
    return [f"{course_id}-staff" if is_staff(claims) else f"{course_id}-students"]


def record_launch(folder: Path, name: str, claims: dict) -> None:
    """user name -> sub, name, e-mail, in lti-users.json (write_private). A name already
    recorded for another sub is refused: two LMS users never share a hub user (home,
    gradebook row, LTI id)."""
    path = folder / USERS_FILE
    users = json.loads(path.read_text()) if path.exists() else {}
    known = users.get(name, {}).get("sub", claims["sub"])
    if known != claims["sub"]:
        raise LaunchRefused(f"the hub name {name} belongs to another LMS user already")
    users[name] = {"sub": claims["sub"], "name": claims.get("name", ""),
                   "email": claims.get("email", ""), "staff": is_staff(claims)}
    write_private(path, users)


def record_line_item(folder: Path, claims: dict) -> None:
    """The launch's AGS claim, per resource link, in lti-links.json: the LMS says there which
    line item (gradebook column) the link's scores go to (`lineitem`), or where line items are
    made (`lineitems`), so nobody copies its URL into lti.json. A launch without the claim (a
    link with no grade) records nothing."""
    ags, link = claims.get(AGS_CLAIM), claims.get(RESOURCE_LINK_CLAIM)
    if not isinstance(ags, dict) or not isinstance(link, dict) or not link.get("id"):
        return
    entry = {key: ags[key] for key in ("lineitem", "lineitems") if isinstance(ags.get(key), str)}
    if not entry:
        return
    entry["title"] = str(link.get("title", ""))
    path = folder / LINKS_FILE
    links = json.loads(path.read_text()) if path.exists() else {}
    if links.get(str(link["id"])) != entry:
        links[str(link["id"])] = entry
        write_private(path, links)


def write_private(path: Path, data: dict) -> None:
    """JSON replaced whole (a reader never sees half a file), mode 0600 (e-mail addresses)."""
    partial = path.with_suffix(".json.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
    os.replace(partial, path)
