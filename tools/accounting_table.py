"""The noise of every multi-measurement (ε, δ) method before and after accounting at the limit.

::

    python tools/accounting_table.py            # print the table (markdown)
    python tools/accounting_table.py --write    # rewrite the block of docs/science/accounting.md
    python tools/accounting_table.py --check    # exit 1 if that block is out of date

For each method at (ε, δ) = (1, 10⁻³) and a board shape (n, d), every measurement's noise multiplier (noise std, or
Laplace scale, over its sensitivity) under the published calibration (``"split"``, MST's and AIM's ``"zcdp"``) and
under ``accounting="pld"`` (AIM: its Gaussian-DP filter, ``"gdp"``, at its first round), and the gain in
signal-to-noise ratio (their ratio). Computed by the methods' own planning
functions, never typed by hand. The effect on the board's Table 3.3 cells needs the board's regeneration.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "science" / "accounting.md"
EPS, DELTA = 1.0, 1e-3
SHAPE = (569, 30)  # WDBC, the board's fewest rows
Q = 2000  # direct answering: queries answered


def rows() -> list[dict[str, str]]:
    """One row per measurement: method, measurement, mechanism, multiplier before, after, gain."""
    from dpkit.core.composition import per_step_epsilon
    from dpkit.evaluation.gate import BOARD_SHAPES
    from dpkit.mechanisms.pca import covariance_sensitivity, psi_noise_scale
    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism
    from dpkit.mechanisms.trig.moments import moment_noise
    from dpkit.mechanisms.vector_release import release_plan
    from dpkit.methods.candidate_lp import CandidateLP
    from dpkit.methods.candidates import GaussianCandidates
    from dpkit.methods.direct import DirectAnswering
    from dpkit.methods.gaussian_fit import GaussianFit
    from dpkit.methods.marginals import IndependentMarginals
    from dpkit.methods.mst import noise_plan
    from dpkit.methods.mwem import MWEM

    n, d = SHAPE
    out: list[dict[str, str]] = []

    def add(method, meas, mech, before, after):
        out.append({"method": method, "measurement": meas, "mechanism": mech, "before": f"{before:.4g}",
                    "after": f"{after:.4g}", "gain": f"{before / after:.3f}"})

    marg = IndependentMarginals(epsilon=EPS, delta=DELTA, kind="moments")
    shares = marg.moment_shares(n, d)
    for b, a in zip(release_plan(shares, epsilon=EPS, delta=DELTA, accounting="split"),
                    release_plan(shares, epsilon=EPS, delta=DELTA, accounting="pld")):
        add("marginals-moments", b.share.name, b.mechanism, b.scale / b.sensitivity, a.scale / a.sensitivity)
    for route in ("analyze_gauss", "psi"):
        fit = GaussianFit(epsilon=EPS, delta=DELTA, method=route)
        split = GaussianFit(epsilon=EPS, delta=DELTA, method=route, accounting="split")
        for b, a in zip(split.release_plan(n, d), fit.release_plan(n, d)):
            add(fit.name, b.share.name, b.mechanism, b.scale / b.sensitivity, a.scale / a.sensitivity)
        if route == "psi":
            rho = covariance_sensitivity(n, d) * math.sqrt(min(fit.k, d))
            s_before = psi_noise_scale(covariance_sensitivity(n, d), d=d, k=min(fit.k, d), n_iter=fit.n_iter,
                                       epsilon=EPS / 3, delta=DELTA / 2)
            add(fit.name, f"pca, {fit.n_iter} steps", "gaussian", s_before / rho,
                fit.pca_noise_scale(n, d) / rho)
    trig = ImprovedTrigonometricMechanism(epsilon=EPS, delta=DELTA)
    mom = moment_noise(n, trig.R, epsilon=EPS / 3, delta=DELTA / 2)
    t = trig.composition_factor(mom, n, d)
    sens = mom.l2_sensitivity if mom.kind == "gaussian" else mom.l1_sensitivity
    add("trig-II", f"{trig.R} moments", mom.kind, mom.scale / sens, t * mom.scale / sens)
    add("trig-II", "mean", "laplace", 3 / EPS, t * 3 / EPS)
    rho = covariance_sensitivity(n, d) * math.sqrt(trig.k)
    s_pca = psi_noise_scale(covariance_sensitivity(n, d), d=d, k=trig.k, n_iter=trig.n_iter, epsilon=EPS / 3,
                            delta=DELTA / 2)
    add("trig-II", f"pca, {trig.n_iter} steps", "gaussian", s_pca / rho, t * s_pca / rho)
    eps0 = per_step_epsilon(EPS, DELTA, Q, rule="advanced")[0]
    direct = DirectAnswering(epsilon=EPS, delta=DELTA, noise="laplace_II", sensitivity="unit")
    from dpkit.queries.workload import GaussianKernelWorkload

    wl = GaussianKernelWorkload.generate(Q, 2, sigma=2.0, rng=0)
    b_pld = direct.noise_scales(wl, n)[0][0] * n
    add("direct-laplace_II", f"{Q} answers", "laplace", 1 / eps0, b_pld)
    cands = GaussianCandidates(fit=GaussianFit(epsilon=math.inf, accounting="pld"))  # the registry's
    mwem = MWEM(epsilon=EPS, delta=DELTA, candidates=cands)
    t = mwem.composition_factor(n, d)
    eps_c, d_c = mwem._candidate_budget()
    for r in cands.releases(n, d, epsilon=eps_c, delta=d_c, factor=1.0):
        add("mwem-gaussian", f"candidate fit: {r['name']}", r["mechanism"], r["scale"] / r["sensitivity"],
            t * r["scale"] / r["sensitivity"])
    e = mwem._rounds_epsilon()
    add("mwem-gaussian", f"{mwem.T} selections", "exponential", 1 / e, t / e)
    add("mwem-gaussian", f"{mwem.T} measurements", "laplace", 1 / e, t / e)
    lp = CandidateLP(epsilon=EPS, delta=DELTA, candidates=cands)
    t = lp.composition_factor(n, d)
    mom = lp._moment_noise(n)
    sens = mom.l2_sensitivity if mom.kind == "gaussian" else mom.l1_sensitivity
    add("lp-gauss-analyze-gauss-cands", f"{lp.R} moments", mom.kind, mom.scale / sens, t * mom.scale / sens)
    _, _, eps_c, d_c = lp._split()
    for r in cands.releases(n, d, epsilon=eps_c, delta=d_c, factor=1.0):
        add("lp-gauss-analyze-gauss-cands", f"candidate fit: {r['name']}", r["mechanism"],
            r["scale"] / r["sensitivity"], t * r["scale"] / r["sensitivity"])
    for data, (_, dd) in sorted(BOARD_SHAPES.items()):
        z, p = noise_plan(EPS, DELTA, dd, (1 / 3, 1 / 3, 1 / 3), "zcdp"), noise_plan(EPS, DELTA, dd, (1 / 3, 1 / 3, 1 / 3),
                                                                                          "pld")
        add(f"mst, {data}", "one-way", "gaussian", z["std1"] / math.sqrt(2 * dd),
            p["std1"] / math.sqrt(2 * dd))
        add(f"mst, {data}", f"{dd - 1} selections", "exponential", 1 / z["eps_round"],
            1 / p["eps_round"])
    from dpkit.methods.aim import AIM, initial_scales

    for data, (_, dd) in sorted(BOARD_SHAPES.items()):  # AIM's first round (its filter anneals from there)
        (s_z, e_z), (s_g, e_g) = (initial_scales(*AIM(epsilon=EPS, delta=DELTA, accounting=acc).budget(dd),
                                                 AIM(epsilon=EPS, delta=DELTA).alpha, acc) for acc in ("zcdp", "gdp"))
        add(f"aim, {data}", "first round's measurement", "gaussian", s_z / math.sqrt(2), s_g / math.sqrt(2))
        add(f"aim, {data}", "first round's selection", "exponential", 1 / e_z, 1 / e_g)
    return out


def table() -> str:
    """The markdown table of :func:`rows`."""
    head = "| method | measurement | published | `pld` | gain |\n|---|---|---:|---:|---:|\n"
    body = "".join(f"| {r['method']} | {r['measurement']} ({r['mechanism']}) | {r['before']} | {r['after']} | "
                   f"{r['gain']} |\n" for r in rows())
    n, d = SHAPE
    return (f"At (ε, δ) = ({EPS:g}, {DELTA:g}), n = {n}, d = {d} (WDBC's shape; MST and AIM at each board data set's "
            "d; AIM: its first round under the zCDP and the Gaussian-DP filter, in the `pld` column). "
            "Published and `pld`: the noise multiplier, noise std (Laplace: scale) over the measurement's sensitivity "
            "(L2 for Gaussian, L1 for Laplace; for a selection 1/ε of a round); gain: their ratio, the signal-to-noise "
            "ratio gained. Written by `python tools/accounting_table.py --write`.\n\n"
            + head + body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite the block of {PAGE.relative_to(ROOT)}")
    ap.add_argument("--check", action="store_true", help="exit 1 if the block is out of date")
    a = ap.parse_args(argv)
    text = table()
    if not (a.write or a.check):
        print(text, end="")
        return 0
    from dpkit.core.marked import MarkedBlockError, read_marked, write_marked

    try:
        if a.check:
            if read_marked(PAGE, "accounting-table") != text:
                print(f"{PAGE.relative_to(ROOT)}: the accounting table is out of date: run python "
                      "tools/accounting_table.py --write", file=sys.stderr)
                return 1
            return 0
        write_marked(PAGE, "accounting-table", text)
    except MarkedBlockError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the accounting table to {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
