"""Every registered pass, property-tested by ``check_pass`` on generated programs (200 each
in the ``ci`` profile; more under ``HYPOTHESIS_PROFILE=thorough``). A pass registered later
is covered without touching this file. Here the focus is check_pass's automatic one and a
pass that rarely fires is accepted (``allow_vacuous``): that each pass fires under a focus
is tests/testing/test_registered_passes.py's business."""

from __future__ import annotations

import pytest

from relay_ref.passes import get_pass, pass_names
from relay_ref.testing import check_pass


@pytest.mark.parametrize("name", pass_names())
def test_pass_preserves_types_and_refines_meaning(name: str) -> None:
    check_pass(get_pass(name), allow_vacuous=True)
