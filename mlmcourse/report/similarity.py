"""Answer cells near-identical across students: submissions that need a human look.

Fingerprints by winnowing (Schleimer, Wilkerson and Aiken 2003, as MOSS and copydetect do) over
the cell's Python tokens with every name made the same (`V`) and literals kept by kind, so that
renaming variables or reformatting hides nothing. What the release gave every student (the
signature, the docstring, the stub) and what the instructor's solution holds are left out: most
answers start from the same lines, and an answer equal to the solution is said once, as a
note ("same as the instructor's solution"), not as a pair with every other such student.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from mlmcourse.report.collect import ClassData

K = 10  # tokens per k-gram: shorter runs are common idioms (`x.sum(dim=-1)`)
WINDOW = 4  # winnowing window: every shared run of K + WINDOW - 1 tokens is found
MIN_SHARED = 15  # fingerprints two cells share beyond the release and the solution (a
# one-token slip from the solution, the same in two cells, makes about 7: a common mistake)
MIN_OVERLAP = 0.8  # ... and that share of the smaller cell's own fingerprints
MAX_GROUP = 25  # a fingerprint more students hold than this is a common idiom, not a copy
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}


def tokens(code: str) -> list[str]:
    """The code's tokens, names as `V` (after a dot they are kept: `.exp` is not `.log`),
    strings as `S`, numbers as they are; comments and layout dropped. Code that does not
    tokenize (a magic, a syntax error) is read line by line, as words."""
    out: list[str] = []
    try:
        previous = ""
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in _SKIP:
                continue
            text = token.string
            if token.type == tokenize.NAME and not keyword.iskeyword(text) and previous != ".":
                text = "V"
            elif token.type == tokenize.STRING:
                text = "S"
            out.append(text)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = code.split()
    return out


def fingerprints(code: str) -> set[int]:
    """The winnowed hashes of the code's K-grams of tokens."""
    seq = tokens(code)
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(seq[i:i + K]).encode(),
                                             digest_size=8).digest(), "big")
              for i in range(len(seq) - K + 1)]
    if len(hashes) <= WINDOW:
        return set(hashes)
    return {min(hashes[i:i + WINDOW]) for i in range(len(hashes) - WINDOW + 1)}


def normalised(code: str) -> str:
    return " ".join(tokens(code))


@dataclass
class Pair:
    notebook: str
    grade_id: str
    first: str
    second: str
    shared: int  # fingerprints in common, the release's and the solution's aside
    overlap: float  # shared / the smaller cell's own fingerprints
    first_code: str = ""
    second_code: str = ""


@dataclass
class Similarity:
    pairs: list[Pair] = field(default_factory=list)
    # (notebook, grade_id) -> students whose answer is the instructor's solution, renamed or not
    as_solution: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def similar_answers(data: ClassData) -> Similarity:
    found = Similarity()
    for (name, gid), solution in sorted(data.release.solutions.items()):
        given = fingerprints(data.release.stubs.get((name, gid), "")) | fingerprints(solution)
        reference = normalised(solution)
        own: dict[str, set[int]] = {}
        codes: dict[str, str] = {}
        for student in sorted(data.students):
            submission = data.students[student].submissions.get(name)
            code = submission.answers.get(gid) if submission else None
            if not code:
                continue
            if normalised(code) == reference:
                found.as_solution.setdefault((name, gid), []).append(student)
                continue
            prints = fingerprints(code) - given
            if prints:
                own[student], codes[student] = prints, code
        found.pairs.extend(_pairs(name, gid, own, codes))
    found.pairs.sort(key=lambda p: (-p.overlap, -p.shared, p.notebook, p.first))
    return found


def _pairs(name: str, gid: str, own: dict[str, set[int]], codes: dict[str, str]) -> list[Pair]:
    """Pairs of students whose own fingerprints overlap enough: an index from fingerprint to
    holders, so only students who share something are compared (a class of 500 stays fast)."""
    holders: dict[int, list[str]] = defaultdict(list)
    for student, prints in own.items():
        for value in prints:
            holders[value].append(student)
    shared: dict[tuple[str, str], int] = defaultdict(int)
    for students in holders.values():
        if 1 < len(students) <= MAX_GROUP:
            for pair in combinations(students, 2):
                shared[pair] += 1
    pairs = []
    for (first, second), count in shared.items():
        overlap = count / min(len(own[first]), len(own[second]))
        if count >= MIN_SHARED and overlap >= MIN_OVERLAP:
            pairs.append(Pair(name, gid, first, second, count, overlap, codes[first],
                              codes[second]))
    return pairs
