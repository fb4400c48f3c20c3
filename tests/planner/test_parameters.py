"""Parameter types implied by a statement's text."""

from heron.planner.parameters import cast_parameter_types


def test_cast_parameter_types():
    assert cast_parameter_types(
        "SELECT $1::int, CAST($2 AS double precision), $3::int[], $4::timestamp with time zone,"
        " $5::oid[]") == {1: 23, 2: 701, 3: 1007, 4: 1184, 5: 1028}
