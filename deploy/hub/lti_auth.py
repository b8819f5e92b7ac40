"""The hub's LTI 1.3 mode (course.json "auth": "lti"): launches from the school's LMS through
jupyterhub-ltiauthenticator's LTI13Authenticator, configured from the hub folder's lti.json (the
same file `make passback` reads, plus the platform's JWKS and authorization URLs).

The authenticator checks each id_token (signature against the platform's JWKS, issuer,
audience = client id, nonce, expiry); the course adds what it decides: the user name from `sub`
(never the display name), the roles claim as exactly one of the course's hub groups on every
launch (`manage_groups`: a role changed in the LMS changes here next time), and the launch
recorded for passback (state/lti-users.json, root only) with the line item its AGS claim names
(state/lti-links.json). lti.json (state/lti.json) is read again when it changes (`hubctl.py lti`):
a running hub takes new LMS values at the next launch, without a restart.

Servers in LTI mode run in containers only (`--spawner containers`): the local spawner runs a
server as the user's own Unix account, and making Unix accounts from a web request (as root)
is a door this first landing does not open.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

from mlmcourse.lms.launch import (
    LaunchRefused,
    check_course_launch,
    course_groups,
    is_staff,
    record_launch,
    record_line_item,
    user_name,
)
from mlmcourse.lms.settings import HUB_FIELDS, LtiSettingsError, read_lti_settings

# The service of the LTI tool on the hub (lti_service.py): the JWKS the LMS registers, and the
# staff's page that sends grades back. Its URL is /services/lms/.
SERVICE = "lms"
# LTI13Authenticator refuses an id_token issued more than this long ago (its max_age): a nonce
# needs remembering for that long, so a used one is never accepted twice.
TOKEN_MAX_AGE = 600
# The hub's lti.json, beside what passback reads and keeps (launch records, what was sent), so
# `python -m mlmcourse passback --config <hub>/state/lti.json` shares the hub's records.
SETTINGS = "state/lti.json"


class LiveSettings:
    """lti.json as it is now: read again when the file changes (`hubctl.py lti` checks and
    replaces it whole), so a running hub takes new LMS values at its next launch."""

    def __init__(self, path: Path):
        self.path, self.stamp, self.values = path, None, {}

    def current(self) -> dict:
        try:
            stamp = self.path.stat().st_mtime_ns
            if stamp != self.stamp:
                self.values, self.stamp = read_lti_settings(self.path, HUB_FIELDS), stamp
        except (OSError, LtiSettingsError) as err:
            if not self.values:  # (at start: the hub cannot run; later: the last good values)
                raise SystemExit(f"LTI mode: {err}") from err
        return self.values


def authenticator_class(live: LiveSettings):
    """LTI13Authenticator whose login and callback pages first take lti.json's current values
    (issuer, client id, the platform's URLs: the authenticator reads them on each request)."""
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler

    class CurrentSettings:
        async def prepare(self):
            self.authenticator.refresh()
            return await super().prepare()

    class CourseLTI13Authenticator(LTI13Authenticator):
        login_handler = type("LoginInit", (CurrentSettings, LTI13LoginInitHandler), {})
        callback_handler = type("Callback", (CurrentSettings, LTI13CallbackHandler), {})

        def refresh(self) -> None:
            self.take(live.current())

        def take(self, values: dict) -> None:
            if self.issuer != values["issuer"]:
                self.issuer = values["issuer"]
            if self.client_id != {values["client_id"]}:
                self.client_id = {values["client_id"]}
            if self.authorize_url != values["authorize_url"]:
                self.authorize_url = values["authorize_url"]
            if self.jwks_endpoint != values["jwks_url"]:
                self.jwks_endpoint = values["jwks_url"]

    return CourseLTI13Authenticator


def configure(c, hub: Path, course_id: str, spawner: str, admins: set[str]) -> None:
    if spawner != "containers":
        raise SystemExit("LTI mode needs the containers spawner (hubctl.py setup --spawner "
                         "containers): the local spawner runs servers as Unix users")
    live = LiveSettings(hub / SETTINGS)
    values = live.current()
    c.JupyterHub.authenticator_class = authenticator_class(live)
    c.LTI13Authenticator.issuer = values["issuer"]
    c.LTI13Authenticator.client_id = {values["client_id"]}
    c.LTI13Authenticator.authorize_url = values["authorize_url"]
    c.LTI13Authenticator.jwks_endpoint = values["jwks_url"]
    c.LTI13Authenticator.username_key = "sub"
    c.LTI13Authenticator.manage_groups = True
    c.LTI13Authenticator.enable_auth_state = False  # groups come back from the hook
    c.LTI13LaunchValidator.max_age = TOKEN_MAX_AGE
    c.Authenticator.allow_all = True  # whoever the course's LMS launches; roles decide the rest
    # A launch is the way in, and it sets the role: a login lasts a day, so a role taken away
    # in the LMS (a TA no longer) ends here within a day even without another launch.
    c.JupyterHub.cookie_max_age_days = 1
    c.Authenticator.post_auth_hook = post_auth_hook(hub, course_id, live, admins)


def add_tool_service(c, hub: Path, staff_group: str, port: int) -> None:
    """The tool's service (lti_service.py, as root: it alone reads the tool's private key):
    its JWKS for anyone, its grades page for the staff group only."""
    c.JupyterHub.services.append({
        "name": SERVICE, "url": f"http://127.0.0.1:{port}", "oauth_no_confirm": True,
        "command": [sys.executable, str(Path(__file__).resolve().parent / "lti_service.py"),
                    "--hub", str(hub)]})
    c.JupyterHub.load_roles.append({
        "name": "lms-grades", "groups": [staff_group],
        "scopes": [f"access:services!service={SERVICE}"]})


class UsedNonces:
    """Each launch's nonce is accepted once. LTI13Authenticator checks that the nonce is the
    one its state cookie asked for, not that it was never used: a launch posted again with the
    same cookies would log in again. Remembered for the token's max age, in the hub's memory;
    a token issued before this hub started is refused (its nonce may have been used before a
    restart), and one older than max_age the authenticator refuses itself."""

    def __init__(self, max_age: int = TOKEN_MAX_AGE, started: float | None = None):
        self.max_age, self.seen, self.lock = max_age, {}, threading.Lock()
        self.started = time.time() if started is None else started

    def use(self, nonce: str | None, issued: float = float("inf"),
            now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.lock:
            self.seen = {n: t for n, t in self.seen.items() if t > now - self.max_age}
            if not nonce or nonce in self.seen:
                raise LaunchRefused("this launch was used already (a replayed id_token): "
                                    "open the assignment again from the LMS")
            if issued < self.started - 5:  # (a few seconds of clock drift allowed)
                raise LaunchRefused("the launch began before the hub restarted: open the "
                                    "assignment again from the LMS")
            self.seen[nonce] = now


def post_auth_hook(hub: Path, course_id: str, live: LiveSettings, admins: set[str]):
    """The course's checks and bookkeeping of a launch the authenticator accepted."""
    nonces, writing = UsedNonces(), threading.Lock()
    staff_group = f"{course_id}-staff"

    async def hook(authenticator, handler, authentication: dict) -> dict:
        claims = authentication.get("auth_state") or {}
        try:
            values = live.current()
            check_course_launch(claims, values["deployment_id"], values["context_id"])
            nonces.use(claims.get("nonce"), claims.get("iat", 0))
            name = user_name(claims["sub"])
            groups = course_groups(claims, course_id)
            await stop_a_server_of_another_role(handler, name, staff_group in groups,
                                                staff_group)
            await asyncio.to_thread(learn, hub, course_id, name, claims, writing)
        except LaunchRefused as err:
            authenticator.log.warning("LTI launch of sub %r refused: %s", claims.get("sub"), err)
            from tornado.web import HTTPError

            raise HTTPError(403, f"LTI launch refused: {err}") from err
        return {"name": name, "groups": groups, "admin": name in admins}

    return hook


async def stop_a_server_of_another_role(handler, name: str, staff: bool, staff_group: str):
    """A role changed in the LMS reaches a running server too: the server was made for the
    old role (a TA's course folder and formgrader), so it stops, and the launch starts one of
    the new role."""
    user = handler.find_user(name) if handler is not None else None
    if user is None or not user.spawner.active:
        return
    if (staff_group in {group.name for group in user.groups}) != staff:
        if user.spawner.pending:  # starting or stopping: it cannot be stopped now
            raise LaunchRefused("your role changed while your server starts or stops: "
                                "open the assignment again from the LMS in a minute")
        handler.log.warning("LTI: %s is %s now; their server of the other role stops", name,
                            "staff" if staff else "a student")
        await handler.stop_single_user(user)


def learn(hub: Path, course_id: str, name: str, claims: dict, lock: threading.Lock) -> None:
    """What a launch tells the course about its user, kept where each reader looks: the
    launch record (passback's LTI ids), the line item of its link (its AGS claim: where the
    scores go) and the exchange's roster (who may fetch, who collects;
    with the student's name and e-mail, which the gradebook takes at the staff's collect).
    The hub (root) writes only its own state/, never the staff's course folder."""
    import ngshare_roster

    person = ngshare_roster.Person(name, *names(claims), claims.get("email", ""))
    with lock:
        record_launch(hub / "state", name, claims)
        record_line_item(hub / "state", claims)
        db_url, _ = ngshare_roster.locations(hub)
        ngshare_roster.enrol(db_url, course_id, person, teaches=is_staff(claims))


def names(claims: dict) -> tuple[str, str]:
    """(first, last): the OIDC claims given_name and family_name, else the name split once."""
    first, last = claims.get("given_name", ""), claims.get("family_name", "")
    if not (first or last):
        first, _, last = claims.get("name", "").partition(" ")
    return first, last


def role_from_hub_group(staff: str):
    """In LTI mode the hub group is the launch's own (set on every launch): staff or student."""
    def role(spawner) -> str:
        return "instructor" if staff in {g.name for g in spawner.user.groups} else "student"

    return role
