"""Every method name and every parameter override is used or refused, naming the method, the parameter and
what is allowed (registry, notebook 45's ``METHODS``)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dpkit.board.report import BOARD_SUITES, board_methods
from dpkit.methods.registry import configure, get, names, suite

EPS, DELTA = 1.0, 1e-3


def test_get_refuses_a_parameter_the_method_does_not_have():
    with pytest.raises(ValueError, match=r"'trig-II'.*\['bins'\].*'K'"):
        get("trig-II", bins=8)
    with pytest.raises(ValueError, match=r"'rap'.*\['kappa'\]"):
        get("rap", kappa=3.0)  # a parameter of another registered method is no parameter of this one
    with pytest.raises(ValueError, match=r"ImprovedTrigonometricMechanism|trig-I.*\['bins'\]"):
        configure(get("trig-I"), bins=8)


@pytest.mark.parametrize("name", ["lp-eps-inf", "subsample"])
def test_a_non_private_reference_refuses_a_budget(name):
    with pytest.raises(ValueError, match=rf"'{name}' is a non-private reference.*epsilon=0.5"):
        get(name, epsilon=0.5)
    assert math.isinf(get("lp-eps-inf", epsilon=math.inf).epsilon)  # the reference's own ε is no change


def test_an_eps_dp_method_refuses_a_delta():
    with pytest.raises(ValueError, match=r"'trig-I' is ε-DP.*delta=0.01"):
        get("trig-I", delta=0.01)
    with pytest.raises(ValueError, match=r"'mst-eps' is ε-DP"):
        get("mst-eps", delta=1e-5)
    assert get("trig-I", delta=0.0).delta == 0.0


def test_get_of_an_unknown_name_suggests_close_names():
    with pytest.raises(KeyError, match=r"'trig-2'.*did you mean 'trig-I'"):
        get("trig-2")


def test_suite_sets_the_budget_by_privacy_class_and_refuses_a_parameter_no_member_has():
    ms = suite("baselines", include=["trig-I", "trig-II", "lp-eps-inf"], epsilon=0.5, delta=1e-4)
    assert (ms["trig-I"].epsilon, ms["trig-I"].delta) == (0.5, 0.0)
    assert (ms["trig-II"].epsilon, ms["trig-II"].delta) == (0.5, 1e-4)
    assert math.isinf(ms["lp-eps-inf"].epsilon)
    with pytest.raises(ValueError, match=r"suite 'baselines'.*\['rounds'\]"):
        suite("baselines", rounds=3)  # AIM's parameter; AIM is not in "baselines"
    with pytest.raises(ValueError, match=r"'trig-3'.*did you mean 'trig-I'"):
        suite("baselines", include=["trig-3"])


def _old_selection(requested: list[str]) -> list[str]:
    """Notebook 45's selection as it was (for unknown-free lists the board must not change)."""
    board = requested or list(dict.fromkeys(names("baselines") + names("leaderboard")))
    return list(dict.fromkeys(n for s in BOARD_SUITES if names(s) for n in suite(s, include=[x for x in board if x in names(s)])))


def test_suite_refuses_include_given_as_a_bare_string():
    """A str is a sequence of its characters: it was refused as the unknown names 'm', 's', 't'."""
    with pytest.raises(TypeError, match=r"include must be a list of method names, not a str; got include='mst' "
                                        r"\(did you mean include=\['mst'\]\?\)"):
        suite("leaderboard", include="mst")
    assert list(suite("leaderboard", include=["mst"])) == ["mst"]


@pytest.mark.parametrize("requested", [[], ["aim", "trig-II", "rap"], ["mst", "kme-answers", "trig-I", "lp-eps-inf"]])
def test_board_methods_keeps_the_notebooks_order_and_budget(requested):
    ms = board_methods(requested, epsilon=0.5, delta=1e-4)
    assert list(ms) == _old_selection(requested)
    for n, m in ms.items():
        assert m.epsilon == (math.inf if m.privacy == "non-private" else 0.5), n
        assert m.delta == (1e-4 if get(n).privacy == "(ε,δ)-DP" else get(n).delta), n


@pytest.mark.parametrize("requested, unknown, close", [
    (["tirg-II"], "tirg-II", "trig-II"),              # only unknown names: was a pandas KeyError later
    (["rap", "kme-answer"], "kme-answer", "kme-answers"),  # an unknown name among known ones: was dropped silently
    (["trig-II", "smalldb"], "smalldb", None),        # registered, but in no suite of the board: was dropped silently
])
def test_board_methods_refuses_an_unknown_name_naming_it(requested, unknown, close):
    with pytest.raises(ValueError, match=rf"'{unknown}'") as err:
        board_methods(requested, epsilon=EPS, delta=DELTA)
    if close is not None:
        assert f"did you mean '{close}'" in str(err.value)
    assert "allowed: trig-I" in str(err.value)


def test_notebook_45_selects_its_methods_with_board_methods_before_anything_runs():
    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "45_leaderboard.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    call = code.index("methods = dp.board_methods(METHODS, epsilon=EPSILON, delta=DELTA)")
    assert call < code.index("Path(OUTPUT_DIR).mkdir") and "suite(" not in code
