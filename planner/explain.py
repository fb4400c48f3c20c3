"""EXPLAIN of AI statements, rendered from the plan's operator nodes.

Contract: `plan_lines(plan, estimates)` describes each operator of an `AiPlan` — its question,
prompt values, anchor and LIMIT goal — with the estimated prompts and tokens (from
`Executor.estimate`, no model run), then the relational part DuckDB runs, each AI answer shown
as `ai_answer_N`. `analyze_lines(plan, work, rows, seconds)` shows the same operators with the
work they actually did. `summary(work)` is the one-line NOTICE an AI statement sends per operator.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from sqlglot import exp

from heron.planner.executor import Estimate
from heron.planner.logical import AiOperator, AiPlan, OperatorWork, is_marker
from heron.planner.statement import Column, Result, Rows

PLAN_COLUMN = Column("QUERY PLAN", pa.string())


def plan_lines(plan: AiPlan, estimates: Sequence[Estimate]) -> list[str]:
    lines = []
    for index, (op, estimate) in enumerate(zip(plan.operators, estimates, strict=True)):
        lines += _operator_lines(index, op, estimate.anchor)
        lines.append(f"  Estimate: prompts<={estimate.candidates} "
                     f"input_tokens~{estimate.input_tokens} "
                     f"fresh_tokens~{estimate.fresh_tokens}")
    lines.append("Relational part (DuckDB): " + _relational_part(plan))
    return lines


def analyze_lines(plan: AiPlan, work: Sequence[OperatorWork], rows: int, seconds: float
                  ) -> list[str]:
    lines = []
    for index, w in enumerate(work):
        m = w.metrics
        lines += _operator_lines(index, w.operator, w.anchor)
        lines.append(f"  Actual: prompts={m.prompts} passed={w.passed} "
                     f"input_tokens={m.input_tokens} fresh_tokens={m.fresh_tokens} "
                     f"cached_tokens={m.cached_tokens} time={m.seconds:.3f} s")
    lines.append(f"Result: {rows} rows in {seconds:.3f} s")
    return lines


def summary(work: OperatorWork) -> str:
    """One line for the client: the work one operator of this statement cost."""
    m = work.metrics
    return (f"{work.operator.label} ({work.operator.call.spelling}): {m.prompts} prompts, "
            f"{m.input_tokens} input tokens, {m.fresh_tokens} fresh, {m.cached_tokens} from "
            f"cached KV, {m.seconds:.2f} s")


def result(lines: list[str], work: tuple[OperatorWork, ...] = ()) -> Result:
    table = pa.table({PLAN_COLUMN.name: lines})
    return Result("EXPLAIN", (PLAN_COLUMN,), Rows.of(table), work=work)


def _operator_lines(index: int, op: AiOperator, anchor: str | None) -> list[str]:
    call = op.call
    lines = [f"{op.label} #{index + 1}  ({call.spelling})",
             f"  Question: {call.question(anchor)}",
             f"  Prompt values: {', '.join(call.template.field_sql())}"]
    if anchor:
        lines.append(f"  Anchor: {anchor} (its documents' KV is shared by all partners)")
    if op.goal is not None:
        lines.append(f"  Stops once {op.goal} candidates pass (LIMIT)")
    return lines


def _relational_part(plan: AiPlan) -> str:
    shown = plan.tree.copy()
    names = {op.call.marker: f"ai_answer_{i + 1}" for i, op in enumerate(plan.operators)}
    for column in list(shown.find_all(exp.Column)):
        if is_marker(column):
            column.replace(exp.column(names[column.name]))
    return shown.sql(dialect="duckdb")
