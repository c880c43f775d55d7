"""Mutation testing of npuc's core modules: cosmic-ray's mutation operators, each mutant run
against the tests that execute its line.

    make mutate                                    # every area, the default sample
    make mutate ARGS="--areas loader,integer --per-area 80 --seed 1"
    .venv/bin/python tests/mutation/run.py --list  # areas, modules, mutant counts

1. Staging. HEAD is checked out as a git worktree at build/mutate/tree (mutants are written
   there, never in the checkout), with the `shared` folder and `.corpus` linked where the
   tests look for them, and build/mutate/pkg maps the `npuc` package onto the worktree as
   pyproject's package-dir does. pkg goes first on PYTHONPATH, ahead of the editable install.
2. Coverage. The suite (but the fuzz smoke pass) runs once under pytest-cov with one context
   per test, so each line of the core modules is known with the tests that execute it
   (cached per HEAD; about twice the suite's time).
3. Mutants. cosmic-ray enumerates every application of the operators in OPERATORS (the
   realistic single-token bugs: arithmetic, comparison, boolean and unary operators swapped,
   numbers moved by one, conditions negated, loops skipped) in the area's modules; a seeded
   sample of --per-area is tested.
4. Each mutant is applied with cosmic-ray's `use_mutation` (the file is restored after), then
   at most --max-tests of the tests covering its line run with `-x`, under a timeout. A failure
   or a timeout kills it; a mutant whose line no test executes counts as not covered. A
   mutant that survives the draw then runs against the rest of its covering tests (unless
   --sample-only), so that a survivor is one the whole suite misses.
   A mutant in a module numba compiles (COMPILED_TESTS: coverage cannot see inside its
   kernels) runs that module's kernel-path tests whole instead.
5. Report: per area and module, mutants, killed, survived, not covered and the score
   (killed / tested); each survivor with its diff, in build/mutate/report.md and report.json.

An interrupted run goes on with the same arguments plus --resume LOG (its printed lines): the
sample and every test draw replay from the seed, and a mutant the log already has keeps its
outcome instead of running again.

docs/testing.md gives the scores and explains every survivor (equivalent, or caught by the
test added for it).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from coverage_map import line_tests, module_tests, statement_spans
from staging import (
    AREAS,
    COMPILED_TESTS,
    IMPORTED,
    TREE,
    WORK,
    area_modules,
    environment,
    pytest_command,
    run_group,
    stage,
)

# cosmic-ray operators (by name prefix) that make realistic bugs. Left out: swaps into
# operators nobody would type there (x - y -> x ** y, x == y -> x is y), which tests kill
# trivially and which would only inflate the score.
OPERATORS = (
    "core/NumberReplacer",
    "core/ReplaceBinaryOperator_Add_Sub",
    "core/ReplaceBinaryOperator_Sub_Add",
    "core/ReplaceBinaryOperator_Mul_Div",
    "core/ReplaceBinaryOperator_Div_Mul",
    "core/ReplaceBinaryOperator_FloorDiv_Div",
    "core/ReplaceBinaryOperator_Div_FloorDiv",
    "core/ReplaceBinaryOperator_LShift_RShift",
    "core/ReplaceBinaryOperator_RShift_LShift",
    "core/ReplaceBinaryOperator_BitAnd_BitOr",
    "core/ReplaceBinaryOperator_BitOr_BitAnd",
    "core/ReplaceComparisonOperator_Lt_LtE",
    "core/ReplaceComparisonOperator_LtE_Lt",
    "core/ReplaceComparisonOperator_Gt_GtE",
    "core/ReplaceComparisonOperator_GtE_Gt",
    "core/ReplaceComparisonOperator_Eq_NotEq",
    "core/ReplaceComparisonOperator_NotEq_Eq",
    "core/ReplaceComparisonOperator_Lt_Gt",
    "core/ReplaceComparisonOperator_Gt_Lt",
    "core/ReplaceAndWithOr",
    "core/ReplaceOrWithAnd",
    "core/ReplaceTrueWithFalse",
    "core/ReplaceFalseWithTrue",
    "core/AddNot",
    "core/ReplaceUnaryOperator_USub_UAdd",
    "core/ReplaceUnaryOperator_Delete_USub",
    "core/ZeroIterationForLoop",
    "core/ReplaceBreakWithContinue",
    "core/ReplaceContinueWithBreak",
)


@dataclass
class Mutant:
    area: str
    module: str  # relative path
    operator: str
    occurrence: int
    line: int
    outcome: str = ""  # killed, survived, not covered
    tests: int = 0
    seconds: float = 0.0
    diff: str = ""
    output: str = field(default="", repr=False)

    def key(self) -> tuple[str, str, str, str]:
        """How a report names it: module, line, operator, occurrence."""
        return self.module, str(self.line), self.operator, str(self.occurrence)


# ------------------------------------------------------------------------------ mutants


def enumerate_mutants(area: str) -> list[Mutant]:
    from cosmic_ray.commands.init import _all_work_items

    modules = area_modules(area)
    annotations = {m: annotation_spans((TREE / m).read_text()) for m in modules}
    found = []
    for item in _all_work_items([TREE / m for m in modules], {}):
        for spec in item.mutations:
            module = str(Path(spec.module_path).relative_to(TREE))
            inside = any(
                lo <= tuple(spec.start_pos) and tuple(spec.end_pos) <= hi
                for lo, hi in annotations[module]
            )
            if spec.operator_name in OPERATORS and not inside:
                found.append(
                    Mutant(area, module, spec.operator_name, spec.occurrence, spec.start_pos[0])
                )
    return found


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) as (line, column) of each type annotation: a mutant there (`int | None`
    into `int & None`) changes nothing the tests run, the annotations being strings."""
    import ast

    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.arg | ast.AnnAssign):
            annotation = node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotation = node.returns
        else:
            continue
        if annotation is not None and annotation.end_lineno is not None:
            start = (annotation.lineno, annotation.col_offset)
            spans.append((start, (annotation.end_lineno, annotation.end_col_offset or 0)))
    return spans


@contextmanager
def applied(mutant: Mutant) -> Iterator[bool]:
    """The mutant written into its module (its diff recorded) while the block runs, the
    module restored after; False if cosmic-ray cannot apply it."""
    from cosmic_ray.mutating import use_mutation
    from cosmic_ray.plugins import get_operator

    path = TREE / mutant.module
    original = path.read_text()
    with use_mutation(path, get_operator(mutant.operator)(), mutant.occurrence) as (_, mutated):
        if mutated is not None:
            text = mutated.decode() if isinstance(mutated, bytes) else mutated
            mutant.diff = _diff(original, text, mutant.module)
        yield mutated is not None
    assert path.read_text() == original, f"{mutant.module} was not restored"


def run_mutant(mutant: Mutant, tests: list[str], timeout: float) -> None:
    start = time.perf_counter()
    with applied(mutant) as competent:
        if not competent:
            mutant.outcome = "incompetent"
            return
        try:
            command = pytest_command("-x", "--no-header", "-W", "ignore", *tests)
            done = run_group(command, environment(), timeout)
            mutant.outcome = "survived" if done.returncode == 0 else "killed"
            mutant.output = done.stdout[-1500:]
        except subprocess.TimeoutExpired:
            mutant.outcome = "killed"
            mutant.output = "timeout"
    mutant.seconds = time.perf_counter() - start


LOGGED = re.compile(
    r"^\[(\S+) \d+/\d+\] (killed|survived|not covered|incompetent)\s+"
    r"(\S+) \((\d+) tests, (\d+) s\)$"
)


def logged_outcomes(log: Path) -> dict[tuple[str, ...], tuple[str, int, float]]:
    """Outcome, test count and seconds per mutant key, from the lines a run printed."""
    found = {}
    for line in log.read_text().splitlines():
        match = LOGGED.match(line.strip())
        if match:
            _, outcome, key, tests, seconds = match.groups()
            found[tuple(key.rsplit(":", 3))] = (outcome, int(tests), float(seconds))
    return found


def _diff(before: str, after: str, name: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", n=0, lineterm=""
    )
    return "\n".join(list(lines)[2:])


# ------------------------------------------------------------------------------ report


def report(mutants: list[Mutant], head: str, args: argparse.Namespace) -> str:
    rows = defaultdict(lambda: defaultdict(int))
    for m in mutants:
        rows[(m.area, m.module)][m.outcome] += 1
    out = [
        f"# Mutation testing of {head[:12]}",
        "",
        f"Sample: {args.per_area} mutants per area (seed {args.seed}), {args.max_tests} covering "
        "tests drawn per mutant"
        + (", no more." if args.sample_only else ", all of them for a survivor of the draw."),
        "",
        "| area | module | mutants | killed | survived | not covered | score |",
        "|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (area, module), counts in sorted(rows.items()):
        for k, v in counts.items():
            totals[area][k] += v
        out.append(_row(area, module, counts))
    out += [
        "",
        "| area | mutants | killed | survived | not covered | score |",
        "|---|---|---|---|---|---|",
    ]
    for area, counts in sorted(totals.items()):
        out.append(_row(area, None, counts))
    everything: dict[str, int] = defaultdict(int)
    for counts in totals.values():
        for k, v in counts.items():
            everything[k] += v
    out.append(_row("all", None, everything))
    out += ["", "## Survivors and mutants no test executes", ""]
    for m in mutants:
        if m.outcome in ("survived", "not covered"):
            title = f"### {':'.join(m.key())} ({m.outcome})"
            out += [title, "", "```diff", m.diff, "```", ""]
    return "\n".join(out) + "\n"


def _row(area: str, module: str | None, counts: dict[str, int]) -> str:
    killed, survived, uncovered = counts["killed"], counts["survived"], counts["not covered"]
    tested = killed + survived + uncovered
    score = f"{100 * killed / tested:.1f} %" if tested else "-"
    cells = [area] + ([module] if module is not None else [])
    cells += [str(tested), str(killed), str(survived), str(uncovered), score]
    return "| " + " | ".join(cells) + " |"


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--areas", default=",".join(AREAS), help="comma-separated")
    parser.add_argument("--per-area", type=int, default=60, help="mutants sampled per area")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tests", type=int, default=60, help="covering tests per mutant")
    parser.add_argument(
        "--sample-only",
        action="store_true",
        help="a mutant surviving its --max-tests drawn tests is not run against the others",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    parser.add_argument("--list", action="store_true", help="count mutants per area and stop")
    parser.add_argument(
        "--commit", default="HEAD", help="the commit to mutate (its coverage is cached)"
    )
    parser.add_argument(
        "--only",
        metavar="MODULE:LINE:OPERATOR:OCCURRENCE",
        action="append",
        help="test these mutants instead of a sample (as a report names them)",
    )
    parser.add_argument(
        "--tests",
        metavar="TEST",
        action="append",
        help="with --only: run these tests (pytest ids) instead of the covering ones, with no "
        "coverage map (the re-check of a survivor by the test added for it)",
    )
    parser.add_argument(
        "--resume",
        metavar="LOG",
        type=Path,
        help="go on with an interrupted run (same arguments): mutants whose outcome LOG prints "
        "keep it and are not run again",
    )
    args = parser.parse_args(argv)
    # A SIGTERM unwinds like ^C, so that run_group kills the pytest under way and the
    # mutated module is restored.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.tests and not args.only:
        parser.error("--tests needs --only")
    areas = args.areas.split(",")
    unknown = [a for a in areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area(s) {', '.join(unknown)} (have {', '.join(AREAS)})")
    if args.resume and not args.resume.is_file():
        parser.error(f"--resume: no such log {args.resume}")
    resumed = logged_outcomes(args.resume) if args.resume else {}
    head = stage(args.commit)
    rng = random.Random(args.seed)
    covering: dict[tuple[str, int], list[str]] = {}
    by_module: dict[str, set[str]] = {}
    mutants: list[Mutant] = []
    for area in areas:
        every = enumerate_mutants(area)
        if args.list:
            by_module = defaultdict(int)
            for m in every:
                by_module[m.module] += 1
            listed = ", ".join(f"{k} ({v})" for k, v in by_module.items())
            print(f"{area}: {len(every)} mutants in {listed}")
            continue
        if args.only:
            wanted = {tuple(o.rsplit(":", 3)) for o in args.only}
            chosen = [m for m in every if m.key() in wanted]
        else:
            chosen = rng.sample(every, min(args.per_area, len(every)))
        if not chosen:
            continue
        if not covering and not args.tests:  # once, and only when a mutant is to run
            covering = line_tests(head)
            by_module = module_tests(covering)
        for i, mutant in enumerate(sorted(chosen, key=lambda m: (m.module, m.line)), 1):
            lines = [mutant.line]
            if (mutant.module, mutant.line) not in covering:
                lines = list(statement_spans(mutant.module).get(mutant.line, lines))
            covered = [t for line in lines for t in covering.get((mutant.module, line), [])]
            tests = set(args.tests or covered)
            if IMPORTED in tests:  # run at import: any test of the module may see it
                tests = (tests - {IMPORTED}) | by_module[mutant.module]
            tests = sorted(tests)
            compiled = COMPILED_TESTS.get(mutant.module) if not args.tests else None
            if mutant.key() in resumed:
                mutant.outcome, mutant.tests, mutant.seconds = resumed[mutant.key()]
                with applied(mutant):  # for its diff in the report: nothing runs
                    pass
                if tests and not compiled:
                    rng.sample(tests, min(args.max_tests, len(tests)))  # the draw it made
            elif compiled:
                mutant.tests = len(compiled)
                run_mutant(mutant, compiled, args.timeout)
            elif not tests:
                mutant.outcome = "not covered"
            else:
                picked = rng.sample(tests, min(args.max_tests, len(tests)))
                mutant.tests = len(picked)
                run_mutant(mutant, picked, args.timeout)
                drawn_tests = set(picked)
                rest = [t for t in tests if t not in drawn_tests]
                if mutant.outcome == "survived" and rest and not args.sample_only:
                    drawn = mutant.seconds  # a survivor faces every covering test
                    mutant.tests += len(rest)
                    run_mutant(mutant, rest, args.timeout * -(-len(rest) // args.max_tests))
                    mutant.seconds += drawn
            print(
                f"[{area} {i}/{len(chosen)}] {mutant.outcome:11s} {':'.join(mutant.key())} "
                f"({mutant.tests} tests, {mutant.seconds:.0f} s)",
                flush=True,
            )
        mutants += chosen
    if args.list:
        return 0
    text = report(mutants, head, args)
    (WORK / "report.md").write_text(text)
    (WORK / "report.json").write_text(json.dumps([asdict(m) for m in mutants], indent=1))
    print(text.split("## Survivors")[0])
    print(f"report: {WORK / 'report.md'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("stopped: the mutated module is restored and no test is left running")
