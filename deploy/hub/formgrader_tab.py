"""The formgrader in a browser tab of its own, for staff on the course's hub (a server extension).

JupyterHub forbids framing a user's server (`frame-ancestors 'none'`): every server of a hub
shares one origin, so one user's page could frame another's. JupyterLab's Nbgrader > Formgrader
shows the formgrader in a frame, which the browser then refuses. Allowing the lab's own address
does not help either: Chromium matches `frame-ancestors` by origin, not path, so it either lets
every user's page frame a TA's server or refuses every page after the first.

So this extension answers the lab's frame (the browser says `Sec-Fetch-Dest: iframe`) with a
short note instead of the formgrader: one link, which asks the lab to open the formgrader in a
new browser tab (nbgrader's frame runs the lab commands its page posts, as the formgrader does
to open a notebook). In that tab the formgrader is the page itself, not framed, and every page
and button works. Only the note may be framed, by pages of this origin; every other page of the
server keeps JupyterHub's `frame-ancestors 'none'`.

Browsers send `Sec-Fetch-Dest` to https:// addresses and to 127.0.0.1 only: behind plain http
on a network address the frame is refused as before (README "The course on a JupyterHub").
"""

from __future__ import annotations

import html
import json

from jupyter_server.base.handlers import JupyterHandler
from tornado import web
from tornado.routing import Matcher, Rule

NOTE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Formgrader</title>
<style>
 body {{ font: 15px/1.5 system-ui, sans-serif; margin: 3rem auto; max-width: 34rem;
        padding: 0 1rem; color: #1a1a1a; }}
 a.open {{ display: inline-block; padding: .6rem 1rem; border-radius: 4px;
          background: #0b57d0; color: #fff; text-decoration: none; font-weight: 600; }}
 a.open:focus {{ outline: 3px solid #1a1a1a; outline-offset: 2px; }}
 code {{ word-break: break-all; }}
</style></head>
<body>
<h1>Formgrader</h1>
<p>On the course's hub the formgrader opens in a browser tab of its own, where every page and
button works (a frame of JupyterLab cannot move between its pages here).</p>
<p><a class="open" id="open-formgrader" href="{url}" target="_blank" rel="noopener">Open the
formgrader in a new tab</a></p>
<p>Or copy its address: <code id="address">{url}</code></p>
<script>
var link = document.getElementById("open-formgrader");
document.getElementById("address").textContent = link.href;  // the whole address, as browsed
link.addEventListener("click", function (event) {{
  event.preventDefault();
  // nbgrader's frame runs lab commands posted by its page; help:open opens a browser tab
  window.parent.postMessage(JSON.stringify({message}), window.location.origin);
}});
</script>
</body></html>
"""


class FramedFormgrader(Matcher):
    """Matches a formgrader page requested by a frame, and nothing else."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def match(self, request):
        framed = request.headers.get("Sec-Fetch-Dest", "").lower() == "iframe"
        return {} if framed and request.path.startswith(self.prefix) else None


class FormgraderNote(JupyterHandler):
    """The note shown in the lab's frame in place of the formgrader."""

    @property
    def content_security_policy(self) -> str:
        return "frame-ancestors 'self'"  # the note only: pages of this origin may frame it

    @web.authenticated
    def get(self, *args, **kwargs) -> None:
        url = self.request.uri  # from the origin's root: right behind a TLS proxy too
        message = {"command": "help:open", "arguments": {"url": url, "newBrowserTab": True,
                                                        "text": "Formgrader"}}
        self.set_header("Cache-Control", "no-store")  # the tab must get the formgrader itself
        self.finish(NOTE.format(url=html.escape(url),
                                message=json.dumps(message).replace("</", "<\\/")))


def _jupyter_server_extension_points():
    return [{"module": "formgrader_tab"}]


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    prefix = web_app.settings["base_url"].rstrip("/") + "/formgrader"
    # First of the application's rules, so a framed request never reaches the formgrader's own
    # handlers; a request that is not framed does not match and goes on to them.
    web_app.default_router.rules.insert(0, Rule(FramedFormgrader(prefix), FormgraderNote))
