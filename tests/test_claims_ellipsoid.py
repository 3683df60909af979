"""dpkit.claims.ellipsoid at small sizes: claims PASS, the printed angles FAIL, the Bonferroni level is γ/G."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpkit.claims import ellipsoid as el


@pytest.fixture(scope="module")
def tests():
    return el.sampler_tests(n_points=5000, dims=[2, 3, 5], cap=0.9, rng=0)


def test_claims_pass_and_printed_angles_fail(tests):
    checks = [el.containment_check(tests), el.correct_sampler_check(tests), el.printed_radius_check(tests),
              el.printed_k2_check(tests), el.printed_angles_check(tests)]
    assert [c.verdict for c in checks] == ["PASS", "PASS", "PASS", "PASS", "FAIL"]
    assert [c.expected for c in checks] == ["PASS", "PASS", "PASS", "PASS", "FAIL"]
    assert checks[1].bound == pytest.approx(1e-3 / 9)  # G = 3 tests × 3 dimensions


def test_streams_and_seed_agree(tests):
    again = el.sampler_tests(n_points=5000, dims=[2, 3, 5], cap=0.9, rng=el.EllipsoidStreams.from_seed(0))
    assert again == tests


def _one(method, k, p):
    return el.SamplerTest(method=method, k=k, max_norm=0.5, p_radius=p, p_direction=p, p_cap=p, cap_share=0.1,
                          cap_share_uniform=0.1)


def test_bonferroni_level_decides():
    """One dimension per sampler: G = 3, so the level is γ/3; p just above passes, just below fails."""
    gamma = 1e-3
    above, below = (_one("uniform", 3, 1.01 * gamma / 3),), (_one("uniform", 3, 0.99 * gamma / 3),)
    assert el.correct_sampler_check(above, gamma=gamma).verdict == "PASS"
    assert el.correct_sampler_check(below, gamma=gamma).verdict == "FAIL"
    # a larger γ (a stricter test) rejects what the default accepts
    assert el.correct_sampler_check(above, gamma=0.1).verdict == "FAIL"


def test_containment_fails_outside_the_ellipsoid(tests):
    assert el.containment_check((*tests, replace(tests[0], max_norm=1.001))).verdict == "FAIL"


def test_missing_dimension_is_loud():
    only3 = (_one("thesis", 3, 0.5),)
    with pytest.raises(ValueError, match="k 2"):
        el.printed_k2_check(only3)


def test_scatter_points_lie_in_the_ball_and_are_reproducible():
    a, b = el.sampler_scatter(n_points=200, k=3, seed=4), el.sampler_scatter(n_points=200, k=3, seed=4)
    assert a.uniform.shape == a.thesis.shape == (200, 3)
    np.testing.assert_array_equal(a.thesis, b.thesis)
    assert np.linalg.norm(a.uniform, axis=1).max() <= 1.0


def test_samplers_figure():
    import matplotlib.pyplot as plt

    from dpkit.outputs.figures.ellipsoid import samplers_figure

    fig = samplers_figure(el.sampler_scatter(n_points=100, k=3, seed=0))
    assert [ax.get_title() for ax in fig.axes] == ["uniform sampler, k = 3 (x₁, x₂)", "thesis sampler, k = 3 (x₁, x₂)"]
    plt.close(fig)


def test_samplers_figure_is_rasterised_in_the_pdf():
    """3000 points per panel (notebook 57): the scatter is a raster inside the PDF, so the file stays small."""
    import io

    import matplotlib.pyplot as plt

    from dpkit.outputs.figures.ellipsoid import samplers_figure

    fig = samplers_figure(el.sampler_scatter(n_points=3000, k=3, seed=0))
    assert all(c.get_rasterized() for ax in fig.axes for c in ax.collections)
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf")
    assert len(buf.getvalue()) < 60_000, len(buf.getvalue())  # vector: about 100 KB
    plt.close(fig)
