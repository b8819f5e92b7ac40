"""lti.json, the one file of the course's LTI 1.3 registration (docs/lms-admin.md),
read and checked here for both its readers: the hub's launches and `make passback`."""

from __future__ import annotations

import json
from pathlib import Path

# What each reader needs from lti.json; a field missing or empty stops that reader.
HUB_FIELDS = ("issuer", "client_id", "deployment_id", "context_id", "authorize_url",
              "jwks_url")
# (the line item is optional: the launches name it, docs/lms-admin.md)
PASSBACK_FIELDS = ("issuer", "client_id", "deployment_id", "token_url", "key_folder")


class LtiSettingsError(Exception):
    """lti.json cannot be read, or lacks a field its reader needs."""


def read_lti_settings(path: Path, needed: tuple[str, ...]) -> dict:
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise LtiSettingsError(f"cannot read the LTI settings {path}: {err}") from err
    if not isinstance(values, dict):
        raise LtiSettingsError(f"{path} must hold one JSON object (docs/lms-admin.md)")
    missing = [name for name in needed if not values.get(name)]
    if missing:
        raise LtiSettingsError(f"{path} lacks {', '.join(missing)} (docs/lms-admin.md)")
    # ids compared with a launch's claims, which are strings: 1 would never equal "1"
    numbers = [name for name in needed if not isinstance(values[name], str)]
    if numbers:
        raise LtiSettingsError(f"{path}: write {', '.join(numbers)} as JSON strings, in quotes, "
                               "as the LMS shows them (docs/lms-admin.md)")
    return values
