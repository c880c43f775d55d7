"""The coverage map of mutation testing: each line of the core modules with the tests that
execute it, from one run of the suite under pytest-cov with a context per test."""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import sqlite3
import subprocess
from collections import defaultdict
from pathlib import Path

from staging import (
    AREAS,
    COVERAGE_IGNORES,
    IMPORTED,
    TREE,
    WORK,
    area_modules,
    environment,
    git,
    pytest_command,
    run_group,
)

# A change to these paths only leaves the coverage of every other test as it was, so the map
# of an ancestor commit is brought up to date by running the test files added or changed.
TEST_FILE = re.compile(r"tests/(?:.+/)?test_[^/]*\.py")
TESTS_ONLY = re.compile(rf"{TEST_FILE.pattern}|tests/mutation/.*|docs/.*|[^/]*\.md")
CACHED = re.compile(r"coverage-([0-9a-f]{12})\.json")
TOOL_COVERAGE = "NPUC_TOOL_COVERAGE"  # tests/tool_runner.py's COVERAGE_SOURCES

Covered = dict[str, dict[str, list[str]]]  # module -> line -> test ids


def line_tests(head: str) -> dict[tuple[str, int], list[str]]:
    """(module, line) -> the ids of the tests that execute it, from one run of the suite
    under coverage with a context per test (cached in build/mutate per commit). When the
    cache holds the map of an ancestor that differs from `head` in test files only, just
    those files run under coverage and their entries are replaced. Run apart from the
    suite, their first tests also record what a process runs once (imports, cached
    results), so the update holds every test a whole run would give each line, and a few
    more: checked against the map of a whole run, it differed only by such additions."""
    cache = WORK / f"coverage-{head[:12]}.json"
    if not cache.exists():
        ancestor = _ancestor_map(head)
        if ancestor is None:
            print("coverage of the core modules over the suite (once per commit) ...", flush=True)
            covered = _covered_lines(["tests"])
        else:
            base, changed = ancestor
            print(
                f"coverage map of {base.stem[9:]} brought up to {head[:12]}: "
                f"{len(changed)} test file(s) changed since ...",
                flush=True,
            )
            covered = _updated(json.loads(base.read_text()), changed)
        cache.write_text(json.dumps(covered))
    else:
        covered = json.loads(cache.read_text())
    return {(m, int(line)): tests for m, lines in covered.items() for line, tests in lines.items()}


def _ancestor_map(head: str) -> tuple[Path, list[str]] | None:
    """The cached map of an ancestor of `head` whose differences from it are all TESTS_ONLY
    (the one with the fewest), and the test files changed since."""
    best: tuple[Path, list[str]] | None = None
    for cache in WORK.glob("coverage-*.json"):
        found = CACHED.fullmatch(cache.name)
        if found is None:
            continue
        commit = _git_ok("rev-parse", "--verify", "--quiet", f"{found[1]}^{{commit}}")
        if commit is None or _git_ok("merge-base", "--is-ancestor", commit, head) is None:
            continue
        changed = git("diff", "--no-renames", "--name-only", commit, head).splitlines()
        if not all(TESTS_ONLY.fullmatch(p) for p in changed):
            continue
        tests = [p for p in changed if TEST_FILE.fullmatch(p)]
        if best is None or len(tests) < len(best[1]):
            best = cache, tests
    return best


def _updated(covered: Covered, changed: list[str]) -> Covered:
    """`covered` without the tests of the `changed` files, plus their coverage now."""
    gone = set(changed)
    for lines in covered.values():
        for line, tests in lines.items():
            lines[line] = [t for t in tests if t.split("::")[0] not in gone]
    present = [p for p in changed if (TREE / p).exists() and p not in COVERAGE_IGNORES]
    if present:
        for module, lines in _covered_lines(present).items():
            for line, tests in lines.items():
                merged = covered.setdefault(module, {}).setdefault(line, [])
                merged += [t for t in tests if t not in merged]
    return covered


def _git_ok(*args: str) -> str | None:
    """`git args` output, or None where it fails (an unknown commit, not an ancestor)."""
    try:
        return git(*args)
    except subprocess.CalledProcessError:
        return None


def _covered_lines(targets: list[str]) -> Covered:
    """Coverage of the core modules by the tests under `targets` (paths in the worktree)."""
    data = WORK / "coverage.db"
    data.unlink(missing_ok=True)
    modules = [m for area in AREAS for m in area_modules(area)]
    # Coverage resolves the files it traces to their real paths, in the worktree: the
    # package map's npuc/ is a real folder of links, so it names the worktree's folders.
    folders = sorted({str((TREE / m).parent) for m in modules})
    sources = [f"--cov={d}" for d in folders]
    # The tools a CLI test starts (tests/tool_runner.py) run under coverage as well, into
    # parallel data files that pytest-cov combines with its own when the run ends.
    env = environment() | {"COVERAGE_FILE": str(data), TOOL_COVERAGE: ",".join(folders)}
    ignores = [f"--ignore={path}" for path in COVERAGE_IGNORES]
    command = pytest_command(*sources, "--cov-context=test", "--cov-report=", *ignores, *targets)
    done = run_group(command, env)
    # A test that fails unmutated would 'kill' every mutant it covers: it is left out.
    failing = set(re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.M))
    if done.returncode not in (0, 1) or not data.exists():
        raise SystemExit(f"the suite did not run under coverage:\n{done.stdout[-3000:]}")
    if failing:
        print(f"left out, failing before any mutation: {', '.join(sorted(failing))}")
    result: Covered = defaultdict(dict)
    with sqlite3.connect(data) as db:
        files = dict(db.execute("select id, path from file"))
        contexts = dict(db.execute("select id, context from context"))
        rows = db.execute("select file_id, context_id, numbits from line_bits")
        for file_id, context_id, numbits in rows:
            path = Path(os.path.realpath(files[file_id]))
            try:
                module = str(path.relative_to(TREE.resolve()))
            except ValueError:
                continue
            test = contexts[context_id].split("|")[0] or IMPORTED
            if test in failing:
                continue
            for line in _lines(numbits):
                result[module].setdefault(str(line), []).append(test)
    return result


@functools.cache
def statement_spans(module: str) -> dict[int, range]:
    """Line -> the lines of the statement it belongs to, for statements written over several
    lines: coverage records only some of them (a constant table by its first line, a
    condition split over lines by the lines of its parts). A compound statement (if, def,
    ...) spans its header only."""
    tree = ast.parse((TREE / module).read_text())
    spans: dict[int, range] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
        span = range(node.lineno, max(last or 0, node.lineno) + 1)
        if len(span) > 1:
            for line in span:
                spans[line] = span
    return spans


def module_tests(covering: dict[tuple[str, int], list[str]]) -> dict[str, set[str]]:
    """Module -> every test that executes one of its lines (the tests of a line that runs
    when the module is imported, such as a constant table or a default argument)."""
    found: dict[str, set[str]] = defaultdict(set)
    for (module, _), tests in covering.items():
        found[module].update(t for t in tests if t != IMPORTED)
    return found


def _lines(numbits: bytes) -> list[int]:
    """Line numbers set in coverage's numbits encoding."""
    return [i * 8 + b for i, byte in enumerate(numbits) for b in range(8) if byte & (1 << b)]
