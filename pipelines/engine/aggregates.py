"""The aggregate operator: an aggregate query's answer change from the change of its projected bag.

The BGP delta rules (:mod:`pipelines.engine.bgp`) keep an aggregate query's solutions projected
onto its group and aggregated variables, with multiplicities, in its bag table (``pe_<query>_bag``):
per group, an index of its values. A group's answer is a function of its rows there alone
(:func:`views.set_functions.answer_row`), so deleting a group's minimum finds the next one
without re-reading views. One step (a batch, or a window):

1. the bag changes by the projection's change (committed with the step like any state table);
2. the rows, before the step, of the groups that change touches are read (a semi-join on the group
   columns; the whole bag for the one group of a query without GROUP BY), in the same collect as
   every other output of the step;
3. each touched group's answer row before and after is computed from them, HAVING keeps some,
   SELECT projects them;
4. the answer change retracts the old rows and inserts the new ones (equal rows cancel; a group
   whose rows all go only retracts).

Without GROUP BY the one group answers even when nothing matches (COUNT 0). Registration writes
that row over the whole graph; a windowed query starts with empty gold, so each of its window
steps touches the group and retracts an old row only when gold holds one.

A query over the whole graph without GROUP BY whose aggregates are all linear (COUNT, SUM, AVG)
keeps running sums instead (:mod:`views.running`, one row of ``pe_<query>_sums``): a step reads
that row, folds the bag's change into it, and replaces it, so it never reads the bag.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterator, Mapping

import pyarrow as pa

from schemas.tables import MULT
from views.conditions import Condition
from views.plan import QueryPlan
from views.running import Running, running_of
from views.set_functions import answer_row

from ..lake import bag_table, gold_table, sums_table
from .arrow import consolidate
from .conditions import where_in_process
from .zsets import ZSetEngine, binding_schema

Frame = Any   # an engine's frame (a Spark engine relation or an Arrow table)

#: Output key: the bag rows, before the step, of the groups the step touches.
OLD_ROWS = "aggregate_rows"
#: Output key (no GROUP BY): gold's rows as a zero-column Z-set, whether the group has answered.
ANSWERED = "aggregate_answered"
#: Output key (running sums): their row before the step.
SUMS = "aggregate_sums"
#: The running sums' one column.
STATE = "state"


class AggregateOperator:
    """Turns the change of ``plan``'s bag into its answer change, on engine ``z``."""

    def __init__(self, plan: QueryPlan, z: ZSetEngine) -> None:
        assert plan.aggregation is not None
        self.plan = plan
        self.z = z
        self.aggregation = plan.aggregation
        # a windowed query without GROUP BY recomputes its one group every step (see the module text)
        self.always = not self.aggregation.group_by and plan.windowed

    def schemas(self) -> dict[str, pa.Schema]:
        """The schemas of the outputs :meth:`outputs` adds besides the bag's change."""
        return {OLD_ROWS: binding_schema(self.plan.bag_columns), ANSWERED: binding_schema(()),
                SUMS: binding_schema((STATE,))}

    def outputs(self, bag_delta: Frame | None) -> dict[str, Frame]:
        """The bag's change and what the answer change needs (lazy on Spark); nothing when the
        step leaves every group as it was."""
        plan, z, group_by = self.plan, self.z, self.aggregation.group_by
        if bag_delta is None and not self.always:
            return {}
        out = {} if bag_delta is None else {bag_table(plan.name): bag_delta}
        if self.aggregation.running:
            return {**out, SUMS: z.read(sums_table(plan.name))}
        if group_by and self.aggregation.touched_by:
            # only the touched groups' rows are read, by key where the store holds the bag keyed
            touched = self.aggregation.touched_by
            bag = z.lookup(bag_table(plan.name), bag_delta, [(c, c) for c in touched])
            out[OLD_ROWS] = z.semijoin(bag, bag_delta, touched)
            return out
        out[OLD_ROWS] = z.read(bag_table(plan.name))
        if not group_by:
            out[ANSWERED] = z.consolidate(z.read(gold_table(plan.name)), ())
        return out

    def answer_change(self, results: Mapping[str, pa.Table]) -> tuple[pa.Table, dict[str, pa.Table]]:
        """The answer change from the collected outputs (keyed as :meth:`outputs` keys them), and
        the change of the running sums, if kept."""
        delta, old = results[bag_table(self.plan.name)], results[OLD_ROWS]
        if self.aggregation.running:       # no change: no answer change (the row is gold's since registration)
            return self._running_change(results[SUMS], delta) if delta.num_rows else (self._answers([]), {})
        before, change = self._groups(old), self._groups(delta, signed=True)
        # a touched group's rows after the batch: Counter's + sums the two and keeps what stays positive
        after = {**before, **{group: before.get(group, Counter()) + rows for group, rows in change.items()}}
        if self.aggregation.distinct:
            return self._support_change(before, after), {}
        touched = set(change)
        answered = True
        if not self.aggregation.group_by:
            touched |= {()} if self.always else set()
            answered = sum(results[ANSWERED][MULT].to_pylist()) > 0
        signed = []
        for group in sorted(touched, key=_sortable):
            if answered:
                signed.append((answer_row(self.aggregation, group, before.get(group, {})), -1))
            signed.append((answer_row(self.aggregation, group, after.get(group, {})), 1))
        return self._answers(signed), {}

    def answers(self, bag: pa.Table) -> tuple[pa.Table, dict[str, pa.Table]]:
        """Every group's answer row from the whole bag (a delta from nothing: the backfill), and the
        running sums' row, if kept."""
        if self.aggregation.running:
            return self._running_change(binding_schema((STATE,)).empty_table(), bag)
        groups = self._groups(bag)
        if not self.aggregation.group_by:
            groups.setdefault((), Counter())
        if self.aggregation.distinct:
            return self._support_change({}, groups), {}
        return self._answers([(answer_row(self.aggregation, g, rows), 1)
                              for g, rows in sorted(groups.items(), key=_first)]), {}

    def _running_change(self, state: pa.Table, delta: pa.Table) -> tuple[pa.Table, dict[str, pa.Table]]:
        """The one group's answer change from the running sums (``state``: none, or one row) and the
        bag's change, and the sums' change: the old row retracted, the new one inserted."""
        old = state[STATE][0].as_py() if state.num_rows else None
        rows: Counter = Counter()
        for key, mult in self._keyed(delta):
            rows[key] += mult
        after = running_of(self.aggregation, rows, old)
        new = after.text()
        signed = [(after.answer_row(self.aggregation), 1)]
        if old is not None:
            signed.append((Running.from_text(old).answer_row(self.aggregation), -1))
        sums = [{STATE: text, MULT: sign} for text, sign in ((old, -1), (new, 1)) if text is not None and old != new]
        schema = binding_schema((STATE,))
        return self._answers(signed), {sums_table(self.plan.name): pa.Table.from_pylist(sums, schema=schema)}

    def _support_change(self, before: dict[tuple, Counter], after: dict[tuple, Counter]) -> pa.Table:
        """SELECT DISTINCT over groups (the whole bag read): the rows that appear, +1, and those
        that go, -1, between every group's answers before and after."""
        def support(groups: dict[tuple, Counter]) -> set[tuple]:
            rows = self._answers([(answer_row(self.aggregation, g, r), 1) for g, r in sorted(groups.items(), key=_first)])
            return set(zip(*(rows[c].to_pylist() for c in self.plan.projection))) if rows.num_rows else set()

        old, new = support(before), support(after)
        projection = self.plan.projection
        signed = [(*row, 1) for row in new - old] + [(*row, -1) for row in old - new]
        return pa.Table.from_pylist([dict(zip((*projection, MULT), row))
                                     for row in sorted(signed, key=lambda r: _sortable(r[:-1]))],
                                    schema=binding_schema(projection, nullable=projection))

    def _groups(self, rows: pa.Table, signed: bool = False) -> dict[tuple, Counter]:
        """Bag rows by group: each group's input tuples with their positive multiplicities (with
        ``signed``, a change's: every multiplicity, negative ones included)."""
        aggregation = self.aggregation
        inputs = aggregation.inputs
        positions = [inputs.index(v) for v in aggregation.group_by] if not aggregation.keys else []
        groups: dict[tuple, Counter] = defaultdict(Counter)
        for key, mult in self._keyed(rows):
            group = aggregation.group_of(dict(zip(inputs, key))) if aggregation.keys else tuple(key[i] for i in positions)
            groups[group][key] += mult
        return dict(groups) if signed else {group: +counter for group, counter in groups.items()}

    def _keyed(self, rows: pa.Table) -> Iterator[tuple[tuple, int]]:
        """Bag rows as (tuple of the aggregation's inputs, multiplicity)."""
        inputs = self.aggregation.inputs
        keys = list(zip(*(rows[c].to_pylist() for c in inputs))) if inputs else [()] * rows.num_rows
        return zip(keys, rows[MULT].to_pylist())

    def _answers(self, signed: list[tuple[dict | None, int]]) -> pa.Table:
        """Signed answer rows (None: a group with no row) through HAVING and SELECT's projection,
        consolidated (every column nullable: an aggregate may be unbound)."""
        columns = self.aggregation.columns
        schema = binding_schema(columns, nullable=columns)
        rows = pa.Table.from_pylist([{**row, MULT: sign} for row, sign in signed if row is not None], schema=schema)
        if self.aggregation.having:
            rows = self._having(rows, schema)
        projection = self.plan.projection
        return consolidate(rows, projection).cast(binding_schema(projection, nullable=projection))

    def _having(self, rows: pa.Table, schema: pa.Schema) -> pa.Table:
        """The answer rows HAVING keeps, decided in process on either engine (a query's few answer
        rows), the engine's FILTER taking any the operators leave undecided."""
        z = self.z

        def by_sql(undecided: pa.Table, sql: str) -> pa.Table:
            return z.collect({0: z.where(z.from_arrow(undecided), Condition(sql))}, {0: schema})[0]
        return where_in_process(rows, self.aggregation.having, by_sql)


def _sortable(values: tuple) -> tuple:
    """A sort key for tuples of terms that may be unbound (None: a key whose expression failed)."""
    return tuple((v is None, v or "") for v in values)


def _first(item: tuple[tuple, Counter]) -> tuple:
    return _sortable(item[0])
