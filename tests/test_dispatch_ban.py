"""The operator-recording protocol: a test's dispatch mode sees what the student process dispatched.

A rule such as "no library loss" (notebooks 2 and 3) is checked on the aten operators the
student's code actually ran, not on the names it called: a ``TorchDispatchMode`` of the test
with a ``record_remote`` method gets, through :mod:`mlmcourse.grader.student_process`, the
operators the student's process (:mod:`mlmcourse.grader.student_side`) recorded for each call and
for the backward of its result.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mlmcourse.course import nbio
from mlmcourse.course.cells import cells_by_grade_id
from mlmcourse.grader import harness as trusted_side
from mlmcourse.grader import student_process as trusted_client
from mlmcourse.grader import zygote_handle
from mlmcourse.grader.limits import CAPS, Limits
from mlmcourse.grader.proxies import StudentFunction

ROOT = Path(__file__).resolve().parents[1]

STUDENT = """
import torch

saved_log_softmax = torch.log_softmax  # saved at definition time: renaming hides nothing


def by_saved_name(z):
    return saved_log_softmax(z, dim=-1).sum()


def by_aten(z, y):
    return torch.ops.aten.cross_entropy_loss(z, y, None, 2)


def by_logsumexp(z):
    return torch.logsumexp(z, dim=-1).sum()


class HiddenInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.logsumexp(z, dim=-1).sum()

    @staticmethod
    def backward(ctx, grad_output):
        (z,) = ctx.saved_tensors
        return grad_output * torch.ops.aten._log_softmax(z, -1, False).exp()


def hidden_in_backward(z):
    return HiddenInBackward.apply(z)


def loss_hidden_in_backward(logits, labels, ignore_index=-100):
    return HiddenInBackward.apply(logits)


def loss_by_logsumexp(logits, labels, ignore_index=-100):
    selected = labels != ignore_index
    rows, targets = logits[selected], labels[selected]
    per_site = torch.logsumexp(rows, dim=1) - rows.gather(1, targets.unsqueeze(1)).squeeze(1)
    return per_site.sum() / max(rows.shape[0], 1)


def log_probs_by_saved_name(logits, labels, ignore_index=-100):
    selected = labels != ignore_index
    safe = torch.where(selected, labels, torch.zeros_like(labels))
    picked = saved_log_softmax(logits, dim=-1).gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    return torch.where(selected, picked, torch.zeros_like(picked))
"""


class Watcher(TorchDispatchMode):
    """Records local operators and those the student process reports (the protocol under test)."""

    def __init__(self):
        super().__init__()
        self.local: list[str] = []
        self.remote: list[list[str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.local.append(func._schema.name)
        return func(*args, **(kwargs or {}))

    def record_remote(self, op_names):
        self.remote.append(op_names)

    def remote_ops(self) -> set[str]:
        return {name for names in self.remote for name in names}


class Bystander(TorchDispatchMode):
    """A mode without record_remote: it must not turn recording on."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.fixture(scope="module")
def student():
    cells = [{"grade_id": "c", "filename": "<c>", "source": STUDENT}]
    limits = Limits(call_timeout_s=20, student_time_s=120, memory_bytes=1 << 30)
    harness = trusted_side.Harness({"notebook": "t.ipynb", "notebooks": {"t.ipynb": cells},
                                    "bindings": {}}, None, limits,
                                   zygote_handle.get_zygote().socket_path)
    client = harness.client("t.ipynb")
    yield lambda name: StudentFunction(client, name)
    harness.close()


@pytest.fixture()
def requests(monkeypatch):
    """Every header the trusted side sends to a student process, and every reply header it gets."""
    sent, received = [], []
    original_send, original_receive = trusted_client.send_msg, trusted_client.StudentProcess.receive

    def spy_send(sock, header, *args, **kwargs):
        sent.append(header)
        return original_send(sock, header, *args, **kwargs)

    def spy_receive(self, *args, **kwargs):
        header, blob = original_receive(self, *args, **kwargs)
        received.append(header)
        return header, blob

    monkeypatch.setattr(trusted_client, "send_msg", spy_send)
    monkeypatch.setattr(trusted_client.StudentProcess, "receive", spy_receive)
    return sent, received


def test_a_saved_name_and_an_aten_call_are_reported(student):
    z = torch.randn(3, 5, dtype=torch.float64)
    y = torch.tensor([1, -100, 4])
    with Watcher() as saved:
        student("by_saved_name")(z)
    with Watcher() as aten:
        student("by_aten")(z, y)
    with Watcher() as allowed:
        student("by_logsumexp")(z)
    assert "aten::_log_softmax" in saved.remote_ops()
    assert {"aten::_log_softmax", "aten::nll_loss_forward"} <= aten.remote_ops()
    assert "aten::logsumexp" in allowed.remote_ops()
    assert not allowed.remote_ops() & {"aten::_log_softmax", "aten::nll_loss_forward"}
    assert "aten::_log_softmax" not in saved.local, "the student's code ran in this process"


def test_the_backward_reports_its_operators(student):
    z = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    loss = student("hidden_in_backward")(z)
    with Watcher() as forward_only:
        student("hidden_in_backward")(z)
    assert "aten::_log_softmax" not in forward_only.remote_ops()
    with Watcher() as watcher:
        loss.backward()
    assert "aten::_log_softmax" in watcher.remote_ops()
    assert torch.allclose(z.grad, torch.softmax(z.detach(), dim=-1))


def test_ordinary_calls_ask_and_send_nothing_more(student, requests):
    sent, received = requests
    z = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    student("by_saved_name")(z).backward()
    with Bystander():
        student("by_saved_name")(z)
    calls = [h for h in sent if h["op"] in ("call", "backward")]  # not the handle releases
    assert [h["op"] for h in calls] == ["call", "backward", "call"]
    assert not any("record_ops" in header for header in calls)
    assert not any("ops" in header for header in received)
    with Watcher():
        student("by_saved_name")(z).backward()
    calls = [h for h in sent if h["op"] in ("call", "backward")]
    assert [h.get("record_ops") for h in calls[3:]] == [True, True]
    assert all(isinstance(h.get("ops"), list) for h in received[3:])


def test_reported_names_are_plain_capped_strings():
    class Named(str):
        pass

    watcher = Watcher()
    session = trusted_client.Session("no-zygote", Limits(), None)
    flood = [f"aten::op{i}" for i in range(10_000)]
    reply = {"ops": ["aten::exp", "aten::exp", 7, None, Named("aten::_log_softmax"), "",
                     "x" * 10_000, ["aten::nested"], *flood]}
    trusted_client.report_ops([watcher], reply, session, "f")
    trusted_client.report_ops([watcher], {"ops": "aten::_log_softmax"}, session, "f")
    trusted_client.report_ops([watcher], {}, session, "f")
    first, not_a_list, missing = watcher.remote
    assert first[0] == "aten::exp" and first.count("aten::exp") == 1
    assert all(type(name) is str and 0 < len(name) <= CAPS.op_name_chars
               for name in first)
    assert "aten::_log_softmax" not in first and "aten::nested" not in first
    assert len(first) <= CAPS.recorded_ops
    assert not_a_list == [] and missing == []
    trusted_client.report_ops([], reply, session, "f")  # nobody watching: nothing read at all


def test_a_subclass_that_dispatches_for_itself_is_an_incident(tmp_path):
    """The worker says when a tensor subclass of the answer's handled an operator: what it ran
    then, no recorder saw, so the trusted side notes the check for a look."""
    from mlmcourse.grader.protocol import SUBCLASS_DISPATCH

    log = tmp_path / "incidents.jsonl"
    session = trusted_client.Session("no-zygote", Limits(), str(log))
    trusted_client.report_ops([Watcher()], {"ops": ["aten::neg", SUBCLASS_DISPATCH]}, session,
                              "target_log_probs")
    assert '"unchecked"' in log.read_text() and "tensor subclass" in log.read_text()


def rule_test(notebook: str, grade_id: str) -> str:
    """The source of a notebook's rule test (public part and hidden tests), as the trusted kernel
    runs it: after the notebook's setup cell (the public part uses its imports) and its hidden
    helper cell (the helpers the graded tests share)."""
    cells = cells_by_grade_id(nbio.read(ROOT / "source" / "bert_mlm" / f"{notebook}.ipynb"))
    helpers = cells["test_helpers"].source if "test_helpers" in cells else ""
    return "\n".join([cells["setup"].source, helpers, cells[grade_id].source])


@pytest.mark.parametrize(("student_names", "fails"), [
    ({"masked_lm_loss": "loss_hidden_in_backward"}, True),
    ({"masked_lm_loss": "loss_by_logsumexp"}, False),
])
def test_notebook_3_rule_sees_the_student_process(student, student_names, fails):
    source = rule_test("03_empty_mask_and_gradient", "test_loss_no_library_losses")
    namespace = {name: student(target) for name, target in student_names.items()}
    if fails:
        with pytest.raises(AssertionError, match="aten::_log_softmax"):
            exec(source, namespace)
    else:
        exec(source, namespace)


def test_notebook_2_rule_sees_a_saved_name(student):
    source = rule_test("02_stable_log_softmax", "test_no_library_losses")
    namespace = {"target_log_probs": student("log_probs_by_saved_name"),
                 "masked_mean_nll": student("loss_by_logsumexp")}
    with pytest.raises(AssertionError, match="target_log_probs ran aten::_log_softmax"):
        exec(source, namespace)
