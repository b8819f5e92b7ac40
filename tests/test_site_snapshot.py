"""The site's static widget snapshot draws every control of the saved panels (no browser)."""

from mlmcourse.build.site import widget_snapshot


def test_a_saved_dropdown_shows_its_chosen_option():
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_mix"]}},
        "mix": {"model_name": "DropdownModel",
                "state": {"description": "mix", "index": 1,
                          "_options_labels": ["100/0/0", "80/10/10", "custom"]}},
    }
    html = widget_snapshot(state, "box")
    assert "<select disabled>" in html
    assert "<option selected>80/10/10</option>" in html
    assert html.count("<option") == 3 and ">mix<" in html
