"""Values that cannot work are refused where they are read, one line each; what is accepted stays in bounds: weight
grids never leave their range, reports are always valid JSON, plots stay linear in the grid."""
from __future__ import annotations

import pytest

from rescorer.combine import Column

GRIDS = [  # (range, step, the weights searched)
    ((0, 0.5), 0.3, [0.0, 0.3]),
    ((0, 1), 0.15, [0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9]),
    ((0, 1), 0.3, [0.0, 0.3, 0.6, 0.9]),
    ((0, 1), 0.5, [0.0, 0.5, 1.0]),
    ((0, 1), 0.1, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ((0, 0.3), 0.1, [0.0, 0.1, 0.2, 0.3]),
    ((0.1, 0.7), 0.2, [0.1, 0.3, 0.5, 0.7]),
    ((0.2, 0.9), 0.35, [0.2, 0.55, 0.9]),
    ((-1, 1), 0.25, [-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0]),
    ((0, 1), 1 / 3, [0.0, 0.3333333333, 0.6666666667, 1.0]),
    ((0.5, 0.5), 0.1, [0.5]),
    ((0, 0.05), 0.1, [0.0]),
]


@pytest.mark.parametrize("bounds, step, expected", GRIDS)
def test_a_weight_grid_stays_inside_its_range_and_reaches_hi_when_hi_is_on_it(bounds, step, expected):
    column = Column("lm", range=bounds, step=step)
    assert column.grid.tolist() == expected
    assert column.size == len(expected)
