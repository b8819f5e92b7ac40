"""A simulated LMS platform (LTI 1.3) for tests: its own keys and JWKS, a token endpoint that
checks the tool's client assertion (signature against the tool's JWKS, aud, exp), a line item
whose scores endpoint keeps what it received and refuses a bad token, and launches.

A launch as a browser meets it (OIDC third-party login, LTI 1.3 core 5.1): the course page's
link `GET /launch?sub=...` sends the browser to the tool's login initiation URL; the tool sends
it back to `/authorize` with its state and nonce; the platform answers with a page that posts
the signed id_token and the state to the tool's redirect URI (response_mode form_post).

In-process on 127.0.0.1, a free port: `with SimulatedPlatform(tool_jwks) as lms: ...`; for
launches, `lms.tool_url` is the hub's address and `lms.people` who may launch, with their role.
"""

from __future__ import annotations

import html
import json
import secrets
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
ROLES = {name: MEMBERSHIP + name for name in ("Learner", "Instructor", "TeachingAssistant")}


class SimulatedPlatform:
    def __init__(self, tool_jwks: dict, client_id: str = "tool-client-1",
                 deployment_id: str = "deployment-1"):
        self.tool_jwks, self.client_id, self.deployment_id = tool_jwks, client_id, deployment_id
        self.context_id = "course-1"  # the LMS course the tool is placed in
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.tokens: set[str] = set()
        self.scores: list[dict] = []
        self.refuse_tokens = False
        self.tool_url = ""  # the hub's address, for launches
        self.people: dict[str, dict] = {}  # sub -> role and names (who may launch)
        self.launches: list[dict] = []  # every id_token and state handed to a browser
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.issuer, self.token_url = self.url, f"{self.url}/token"
        self.lineitem_url = f"{self.url}/lineitems/1/lineitem"
        self.authorize_url, self.jwks_url = f"{self.url}/authorize", f"{self.url}/jwks"

    def lti_json(self, key_folder: str) -> dict:
        """The tool's lti.json for this platform (README: every field)."""
        return {"issuer": self.issuer, "client_id": self.client_id,
                "deployment_id": self.deployment_id, "context_id": self.context_id,
                "token_url": self.token_url,
                "lineitem_url": self.lineitem_url, "key_folder": key_folder,
                "authorize_url": self.authorize_url, "jwks_url": self.jwks_url}

    def __enter__(self) -> SimulatedPlatform:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def jwks(self) -> dict:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": "platform-1", "alg": "RS256", "use": "sig"}]}

    def enrol(self, sub: str, role: str, given_name: str, family_name: str) -> None:
        self.people[sub] = {"role": role, "given_name": given_name, "family_name": family_name}

    @property
    def target_link_uri(self) -> str:
        """What the course's link opens: the user's JupyterLab on the hub."""
        return f"{self.tool_url}/hub/user-redirect/lab"

    @property
    def redirect_uri(self) -> str:
        """The one redirect URI registered for the tool (README: registration values)."""
        return f"{self.tool_url}/hub/lti13/oauth_callback"

    def login_initiation(self, sub: str) -> str:
        """The tool's OIDC login initiation URL for a launch of `sub` (LTI 1.3 core 5.1.1)."""
        query = urllib.parse.urlencode({
            "iss": self.issuer, "login_hint": sub, "target_link_uri": self.target_link_uri,
            "client_id": self.client_id, "lti_deployment_id": self.deployment_id,
            "lti_message_hint": "link-1"})
        return f"{self.tool_url}/hub/lti13/oauth_login?{query}"

    def launch_token(self, sub: str, role: str = "Learner", audience: str | None = None,
                     nonce: str | None = None, expires_in: int = 300, key=None,
                     **extra) -> str:
        """An LtiResourceLinkRequest id_token, signed by the platform (or by `key`: forged)."""
        now = int(time.time())
        person = self.people.get(sub, {"given_name": "Student", "family_name": sub})
        claims = {"iss": self.issuer, "aud": audience or self.client_id, "sub": sub,
                  "nonce": nonce or uuid.uuid4().hex, "iat": now, "exp": now + expires_in,
                  "given_name": person["given_name"], "family_name": person["family_name"],
                  "name": f"{person['given_name']} {person['family_name']}",
                  "email": f"{sub}@school.example",
                  LTI + "roles": [ROLES[role]], LTI + "deployment_id": self.deployment_id,
                  LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
                  LTI + "resource_link": {"id": "link-1"},
                  LTI + "target_link_uri": self.target_link_uri or "http://127.0.0.1/",
                  LTI + "context": {"id": self.context_id, "label": "BERT-MLM"},
                  AGS: {"scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                        "lineitem": self.lineitem_url}, **extra}
        return jwt.encode(claims, key or self.key, algorithm="RS256",
                          headers={"kid": "platform-1"})

    def authorize(self, query: dict) -> tuple[int, str]:
        """The OIDC authorization endpoint: the page that posts the id_token to the tool, or
        why the request is refused."""
        person = self.people.get(query.get("login_hint", ""))
        if query.get("client_id") != self.client_id:
            return 400, "unknown client_id"
        if query.get("redirect_uri") != self.redirect_uri:
            return 400, f"redirect_uri {query.get('redirect_uri')!r} is not registered"
        if person is None or not query.get("nonce") or not query.get("state"):
            return 400, "no such user, or no nonce or state"
        token = self.launch_token(query["login_hint"], person["role"], nonce=query["nonce"])
        self.launches.append({"id_token": token, "state": query["state"],
                              "sub": query["login_hint"]})
        fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(value)}">'
                         for name, value in (("id_token", token), ("state", query["state"])))
        return 200, (f'<!doctype html><html lang="en"><title>Launching</title><body>'
                     f'<form method="post" action="{html.escape(self.redirect_uri)}">{fields}'
                     f'<noscript><button>Continue</button></noscript></form>'
                     f'<script>document.forms[0].submit()</script></body></html>')

    def check_assertion(self, form: dict) -> str | None:
        """None if the tool's client assertion is good, else why not."""
        if form.get("grant_type") != "client_credentials":
            return "grant_type must be client_credentials"
        try:
            header = jwt.get_unverified_header(form["client_assertion"])
            key = next(jwt.PyJWK(k).key for k in self.tool_jwks["keys"]
                       if k["kid"] == header.get("kid"))
            claims = jwt.decode(form["client_assertion"], key, algorithms=["RS256"],
                                audience=self.token_url, issuer=self.client_id,
                                options={"require": ["exp", "iat", "jti", "sub"]})
        except (KeyError, StopIteration, jwt.PyJWTError) as err:
            return f"bad client assertion: {err!r}"
        return None if claims["sub"] == self.client_id else "sub is not the client id"

    def handler(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet tests
                pass

            def answer(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def page(self, code: int, text: str, location: str | None = None) -> None:
                data = text.encode()
                self.send_response(code)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path, _, query = self.path.partition("?")
                query = dict(urllib.parse.parse_qsl(query))
                if path == "/jwks":
                    return self.answer(200, platform.jwks())
                if path == "/launch":  # the link on the course page in the LMS
                    return self.page(302, "", platform.login_initiation(query.get("sub", "")))
                if path == "/authorize":
                    return self.page(*platform.authorize(query))
                self.answer(404, {"error": "not found"})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/token":
                    form = dict(urllib.parse.parse_qsl(body.decode()))
                    problem = "refused" if platform.refuse_tokens else (
                        platform.check_assertion(form))
                    if problem:
                        return self.answer(401, {"error": "invalid_client",
                                                 "error_description": problem})
                    token = secrets.token_hex(16)
                    platform.tokens.add(token)
                    return self.answer(200, {"access_token": token, "token_type": "Bearer",
                                             "expires_in": 3600, "scope": form.get("scope")})
                if self.path == "/lineitems/1/lineitem/scores":
                    bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if bearer not in platform.tokens:
                        return self.answer(401, {"error": "bad token"})
                    if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                        return self.answer(415, {"error": "wrong content type"})
                    platform.scores.append(json.loads(body))
                    return self.answer(200, {})
                self.answer(404, {"error": "not found"})

        return Handler
