"""EXPLAIN of AI statements, rendered from the plan's operator nodes.

Contract: `plan_lines(plan, planned, settings)` describes the operators of an `AiPlan` in the
order they would run — question, prompt values, tables, anchor, LIMIT goal — each with the
optimizer's estimates (candidates, prompts, selectivity and where it comes from, input / fresh /
cached tokens, seconds; marked `~` when the candidates were too many to count and DuckDB's
estimate stands for them), the statement's token budget when one is set, then the relational
part DuckDB runs, each AI answer shown as
`ai_answer_N`. `analyze_lines(planned, work, rows, seconds, settings)` shows the operators
in the order they ran with the same estimates and the actual work side by side. Nothing here runs
anything. `summary(work)` is the one-line NOTICE an AI statement sends per operator.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from sqlglot import exp

from heron.planner.budget import estimated_tokens
from heron.planner.logical import AiOperator, AiPlan, OperatorWork, Source, is_marker
from heron.planner.optimizer import Estimate, Evidence
from heron.planner.settings import MAX_TOKENS, Settings
from heron.planner.statement import Column, Result, Rows

PLAN_COLUMN = Column("QUERY PLAN", pa.string())
_WIDTH = 16  # of the label column


def plan_lines(plan: AiPlan, planned: Sequence[tuple[AiOperator, Estimate]],
               settings: Settings) -> list[str]:
    lines = [f"AI operators in the order they run (heron.order = {settings.order.value}):"]
    for index, (op, estimate) in enumerate(planned):
        goal = estimate.goal
        lines += _operator_lines(index, op, estimate.anchor, goal.rows if goal else None,
                                 "top" if goal and goal.top else "stop")
        lines.append(f"  {'':{_WIDTH}}{'estimated':>14}")
        for label, value in _estimated(estimate):
            lines.append(f"  {label:{_WIDTH}}{value:>14}")
    if settings.max_tokens:
        total = sum(estimated_tokens(estimate.work) for _, estimate in planned)
        verdict = "refused: over budget" if total > settings.max_tokens else "within budget"
        lines.append(f"Token budget ({MAX_TOKENS}): {settings.max_tokens}; estimated "
                     f"{total:.0f} ({verdict})")
    lines.append("Relational part (DuckDB): " + _relational_part(plan))
    return lines


def analyze_lines(planned: Sequence[tuple[AiOperator, Estimate]], work: Sequence[OperatorWork],
                  rows: int, seconds: float, settings: Settings) -> list[str]:
    estimates = {op.marker: estimate for op, estimate in planned}
    lines = [f"AI operators in the order they ran (heron.order = {settings.order.value}):"]
    for index, w in enumerate(work):
        op = w.operator
        lines += _operator_lines(index, op, w.anchor, w.goal)
        estimate = estimates.get(op.marker)
        lines.append(f"  {'':{_WIDTH}}{'estimated':>14}{'actual':>14}")
        actual = dict(_actual(w))
        for label, value in (_estimated(estimate) if estimate else
                             [(label, "-") for label in actual]):
            lines.append(f"  {label:{_WIDTH}}{value:>14}{actual.get(label, ''):>14}")
        extra = [f"{w.reused} answers reused"] * bool(w.reused) + [
            f"{w.sampled} asked first to measure selectivity"] * bool(w.sampled)
        if extra:
            lines.append(f"  ({', '.join(extra)})")
    lines.append(f"Result: {rows} rows in {seconds:.3f} s")
    return lines


def summary(work: OperatorWork) -> str:
    """One line for the client: the work one operator of this statement cost."""
    m = work.metrics
    reused = f", {work.reused} answers reused" if work.reused else ""
    return (f"{work.operator.label} ({work.operator.call.spelling}): {m.prompts} prompts, "
            f"{m.input_tokens} input tokens, {m.fresh_tokens} fresh, {m.cached_tokens} from "
            f"cached KV, {m.seconds:.2f} s{reused}")


def result(lines: list[str], work: tuple[OperatorWork, ...] = ()) -> Result:
    table = pa.table({PLAN_COLUMN.name: lines})
    return Result("EXPLAIN", (PLAN_COLUMN,), Rows.of(table), work=work)


def _estimated(estimate: Estimate) -> list[tuple[str, str]]:
    work = estimate.work
    if estimate.selectivity is None:
        selectivity = "-"
    else:
        selectivity = f"{estimate.selectivity:.2f} {_EVIDENCE[estimate.evidence]}"
    about = "" if estimate.counted else "~"  # from DuckDB's estimate of the candidates
    return [("candidates", f"{about}{estimate.candidates:.0f}"),
            ("prompts", f"{about}{work.prompts:.0f}"), ("selectivity", selectivity),
            ("input tokens", f"{about}{work.input_tokens:.0f}"),
            ("fresh tokens", f"{about}{work.fresh_tokens:.0f}"),
            ("cached tokens", f"{about}{work.cached_tokens:.0f}"),
            ("seconds", f"{about}{estimate.seconds:.3f}")]


_EVIDENCE = {Evidence.ASSUMED: "assumed", Evidence.CATALOG: "catalog", Evidence.SAMPLE: "sample",
             Evidence.NONE: ""}


def _actual(work: OperatorWork) -> list[tuple[str, str]]:
    m = work.metrics
    answered = work.operator.call.spec.kind.value == "boolean"
    asked = max(m.prompts + work.reused, 1)
    selectivity = f"{work.passed / asked:.2f}" if answered and m.prompts + work.reused else "-"
    return [("candidates", str(work.candidates)), ("prompts", str(m.prompts)),
            ("selectivity", selectivity), ("input tokens", str(m.input_tokens)),
            ("fresh tokens", str(m.fresh_tokens)), ("cached tokens", str(m.cached_tokens)),
            ("seconds", f"{m.seconds:.3f}")]


def _operator_lines(index: int, op: AiOperator, anchor: Source | None,
                    goal: int | None = None, kind: str = "stopped") -> list[str]:
    call = op.call
    tables = ", ".join(t.name for t in call.tables) or "no table"
    lines = [f"{op.label} #{index + 1}  ({call.spelling})  on {tables}  [{call.clause.value}]",
             f"  Question: {call.question(anchor)}",
             f"  Prompt values: {', '.join(call.template.field_sql())}"]
    if call.spec.labels:
        lines.append(f"  Labels: {', '.join(call.spec.labels)}")
    if anchor is not None:
        lines.append(f"  Anchor: {anchor.name} (its documents' KV is shared by all partners)")
    if goal is not None:
        lines.append({"stopped": f"  Stopped once {goal} candidates passed (LIMIT)",
                      "stop": f"  Stops once {goal} candidates pass (LIMIT)",
                      "top": f"  Asks only for the first {goal} rows in ORDER BY order "
                             "(LIMIT)"}[kind])
    return lines


def _relational_part(plan: AiPlan) -> str:
    shown = plan.tree.copy()
    names = {op.marker: f"ai_answer_{i + 1}" for i, op in enumerate(plan.operators)}
    for column in list(shown.find_all(exp.Column)):
        if is_marker(column):
            column.replace(exp.column(names[column.name]))
    return shown.sql(dialect="duckdb")
