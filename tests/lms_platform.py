"""A simulated LMS platform (LTI 1.3) for tests: its own keys and JWKS, a token endpoint that
checks the tool's client assertion (signature against the tool's JWKS, aud, exp), a line item
whose scores endpoint keeps what it received and refuses a bad token, and launch id_tokens.

In-process on 127.0.0.1, a free port: `with SimulatedPlatform(tool_jwks) as lms: ...`.
"""

from __future__ import annotations

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
ROLES = {"Learner": "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
         "Instructor": "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"}


class SimulatedPlatform:
    def __init__(self, tool_jwks: dict, client_id: str = "tool-client-1",
                 deployment_id: str = "deployment-1"):
        self.tool_jwks, self.client_id, self.deployment_id = tool_jwks, client_id, deployment_id
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.tokens: set[str] = set()
        self.scores: list[dict] = []
        self.refuse_tokens = False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.issuer, self.token_url = self.url, f"{self.url}/token"
        self.lineitem_url = f"{self.url}/lineitems/1/lineitem"

    def __enter__(self) -> SimulatedPlatform:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def jwks(self) -> dict:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": "platform-1", "alg": "RS256", "use": "sig"}]}

    def launch_token(self, sub: str, role: str = "Learner", audience: str | None = None,
                     nonce: str | None = None, expires_in: int = 300, **extra) -> str:
        """An LtiResourceLinkRequest id_token, signed by the platform."""
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": audience or self.client_id, "sub": sub,
                  "nonce": nonce or uuid.uuid4().hex, "iat": now, "exp": now + expires_in,
                  "name": f"Student {sub}", "email": f"{sub}@school.example",
                  LTI + "roles": [ROLES[role]], LTI + "deployment_id": self.deployment_id,
                  LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
                  LTI + "resource_link": {"id": "link-1"},
                  LTI + "target_link_uri": "http://127.0.0.1/hub/lti13/oauth_callback",
                  LTI + "context": {"id": "course-1", "label": "BERT-MLM"},
                  AGS: {"scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                        "lineitem": self.lineitem_url}, **extra}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "platform-1"})

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

            def do_GET(self):
                if self.path == "/jwks":
                    return self.answer(200, platform.jwks())
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
