"""The hub's LTI 1.3 mode (course.json "auth": "lti"): launches from the school's LMS through
jupyterhub-ltiauthenticator's LTI13Authenticator, configured from the hub folder's lti.json (the
same file `make passback` reads, plus the platform's JWKS and authorization URLs).

The authenticator checks each id_token (signature against the platform's JWKS, issuer,
audience = client id, nonce, expiry); the course adds what it decides: the user name from `sub`
(never the display name), the roles claim as exactly one of the course's hub groups on every
launch (`manage_groups`: a role changed in the LMS changes here next time), and the launch
recorded for passback (state/lti-users.json, root only).

Servers in LTI mode run in containers only (`--spawner containers`): the local spawner runs a
server as the user's own Unix account, and making Unix accounts from a web request (as root)
is a door this first landing does not open.
"""

from __future__ import annotations

from pathlib import Path

from mlmcourse.lms.launch import course_groups, record_launch, user_name
from mlmcourse.lms.settings import HUB_FIELDS, LtiSettingsError, read_lti_settings


def settings(hub: Path) -> dict:
    try:
        return read_lti_settings(hub / "lti.json", HUB_FIELDS)
    except LtiSettingsError as err:
        raise SystemExit(f"LTI mode: {err}") from err


def configure(c, hub: Path, course_id: str, spawner: str) -> None:
    if spawner != "containers":
        raise SystemExit("LTI mode needs the containers spawner (hubctl.py setup --spawner "
                         "containers): the local spawner runs servers as Unix users")
    values = settings(hub)
    c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.auth.LTI13Authenticator"
    c.LTI13Authenticator.issuer = values["issuer"]
    c.LTI13Authenticator.client_id = {values["client_id"]}
    c.LTI13Authenticator.authorize_url = values["authorize_url"]
    c.LTI13Authenticator.jwks_endpoint = values["jwks_url"]
    c.LTI13Authenticator.username_key = "sub"
    c.LTI13Authenticator.manage_groups = True
    c.LTI13Authenticator.enable_auth_state = False  # groups come back from the hook
    c.Authenticator.allow_all = True  # whoever the course's LMS launches; roles decide the rest
    c.Authenticator.post_auth_hook = post_auth_hook(hub, course_id, values["deployment_id"])


def post_auth_hook(hub: Path, course_id: str, deployment_id: str):
    def hook(authenticator, handler, authentication: dict) -> dict:
        claims = authentication.get("auth_state") or {}
        launched_from = claims.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id")
        if launched_from != deployment_id:
            # the authenticator does not check the deployment; the course does
            authenticator.log.warning("LTI launch refused: deployment %r is not %r",
                                      launched_from, deployment_id)
            return None
        name = user_name(claims["sub"])
        record_launch(hub / "state", name, claims)
        return {"name": name, "groups": course_groups(claims, course_id)}

    return hook


def role_from_hub_group(staff: str):
    """In LTI mode the hub group is the launch's own (set on every launch): staff or student."""
    def role(spawner) -> str:
        return "instructor" if staff in {g.name for g in spawner.user.groups} else "student"

    return role
