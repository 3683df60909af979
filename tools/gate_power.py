"""The audit gate's power per method family: the smallest noise divisor (and the true ε it gives) the gate refutes
against the board's claim ε = 1.

For each family the method's noise is divided by f = 1.5, 2, 3, 4 (stopping at the first refuted) while it claims
ε = 1 (δ = 10⁻³ for an (ε, δ)-DP method), and :func:`dpkit.evaluation.gate.audit_gate` runs at its defaults
(WDBC's 569 rows × CSN's 8 attributes, confidence 0.95 jointly over its audits, 10 000 draws per side for the
measurement probe and 3000 for the release), except that the release audit of the families whose release takes a
fraction of a second (MST, AIM, MWEM) gets ``--slow-release`` draws per side instead (their refutation comes from the measurement
probe; the table says so). The true ε of the divided noise: f for Laplace (ε-DP), the analytic Gaussian's ε at δ for
noise σ/f, the zCDP conversion of f²ρ (MST: every measurement; AIM: its initial one-way measurement, α = 0.99 of ρ).

    python tools/gate_power.py --out docs/guide/add-method.md     # rewrites the block between the gate-power markers

Nothing here is a timing; the gate's cost is stated in the guide from its draw counts.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from scipy import optimize

from dpkit.core.zcdp import cdp_delta, cdp_rho
from dpkit.evaluation.gate import audit_gate
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma

EPS, DELTA = 1.0, 1e-3
FACTORS = (1.5, 2.0, 3.0, 4.0)  # a refutation by a statistic counts; a ledger refusing the spend is listed beside it


def _gauss_eps(f: float, delta: float = DELTA) -> float:
    """ε at δ of the analytic Gaussian mechanism calibrated to (ε = 1, δ) with its noise divided by f."""
    target = analytic_gaussian_sigma(EPS, delta, 1.0) / f
    return float(optimize.brentq(lambda e: analytic_gaussian_sigma(e, delta, 1.0) - target, 1e-3, 200.0))


def _zcdp_eps(rho: float, delta: float = DELTA) -> float:
    return float(optimize.brentq(lambda e: cdp_delta(rho, e) - delta, 1e-6, 500.0))


@contextlib.contextmanager
def _patched(module: Any, attr: str, wrap: Callable[[Any], Any]) -> Iterator[None]:
    real = getattr(module, attr)
    setattr(module, attr, wrap(real))
    try:
        yield
    finally:
        setattr(module, attr, real)


def _marginals(name: str) -> Callable[[float], tuple[Any, Any]]:
    def make(f: float) -> tuple[Any, Any]:
        import dpkit.mechanisms.vector_release as vr
        import dpkit.methods.marginals as mm
        from dpkit.methods.registry import get

        def divided(real: Any) -> Any:
            return lambda v, *, l1, l2, **kw: real(v, l1=l1 / f, l2=l2 / f, **kw)

        # the histograms call marginals' noisy_release, the moments theirs through vector_release.planned_release
        return get(name), _both(_patched(mm, "noisy_release", divided), _patched(vr, "noisy_release", divided))
    return make


@contextlib.contextmanager
def _both(a: Any, b: Any) -> Iterator[None]:
    with a, b:
        yield


def _mst(name: str) -> Callable[[float], tuple[Any, Any]]:
    def make(f: float) -> tuple[Any, Any]:
        from dpkit.methods.mst import MST
        from dpkit.methods.registry import get

        ctx = _patched(MST, "_noise", lambda real: lambda self, g, std, shape: real(self, g, std / f, shape))
        return get(name), ctx
    return make


def _aim(f: float) -> tuple[Any, Any]:
    import dpkit.methods.aim as aim_module

    ctx = _patched(aim_module, "initial_scales", lambda real: lambda *a: (real(*a)[0] / f, real(*a)[1]))
    return aim_module.AIM(epsilon=EPS, delta=DELTA, rounds=8, alpha=0.99), ctx


def _mwem(f: float) -> tuple[Any, Any]:
    import dpkit.mechanisms.vector_release as vr
    from dpkit.methods.registry import get

    # the fit's releases (the registry's fit keeps the published split: vector_release.planned_release -> noisy_release)
    ctx = _patched(vr, "noisy_release", lambda real: lambda v, *, l1, l2, **kw: real(v, l1=l1 / f, l2=l2 / f, **kw))
    return dataclasses.replace(get("mwem-gaussian"), candidate_share=0.98), ctx


#: (label, what is divided, factory f -> (method, context), true ε of f or None, slow release).
FAMILIES: list[tuple[str, str, Callable[[float], tuple[Any, Any]], Callable[[float], float] | None, bool]] = [
    ("marginals-histogram-eps", "every cell's Laplace noise", _marginals("marginals-histogram-eps"), lambda f: EPS * f,
     False),
    ("marginals-histogram", "every cell's Gaussian noise", _marginals("marginals-histogram"), _gauss_eps, False),
    ("marginals-moments-eps", "the moments' Laplace noise", _marginals("marginals-moments-eps"), lambda f: EPS * f, False),
    ("mst", "every measurement's Gaussian noise", _mst("mst"), lambda f: _zcdp_eps(f * f * cdp_rho(EPS, DELTA)), True),
    ("aim (α = 0.99, rounds = d)", "the initial one-way measurement's noise", _aim,
     lambda f: _zcdp_eps((0.99 * f * f + 0.01) * cdp_rho(EPS, DELTA)), True),
    ("mwem-gaussian (candidate_share 0.98)", "the Gaussian fit's noise", _mwem, None, True),
]


def measure(label: str, make: Callable[[float], tuple[Any, Any]], slow: bool, slow_release: int) -> dict[str, Any]:
    """The first factor of :data:`FACTORS` the gate refutes (None if none), with its audits."""
    for f in FACTORS:
        method, ctx = make(f)
        kw = {"n_release": slow_release} if slow else {}
        with ctx, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = audit_gate(label, method, epsilon=EPS, delta=float(method.delta), rng=0, **kw)
        print(f"{label}: noise / {f:g}: {'refuted' if res.refuted else 'passed'} "
              + ", ".join(f"{a['probe']} ε_lb {a['epsilon_lb']:.3g}" for a in res.audits), file=sys.stderr)
        refuting = [a for a in res.audits if a["refuted"] and math.isfinite(a["epsilon_lb"])]
        refused = [a for a in res.audits if a["refuted"] and not math.isfinite(a["epsilon_lb"])]
        if refuting:
            return {"factor": f, "audits": refuting, "refused": refused}
    return {"factor": None, "audits": [], "refused": []}


def table(rows: list[tuple[str, str, dict[str, Any], Callable[[float], float] | None, bool]], slow_release: int) -> str:
    lines = ["| method | noise divided | smallest divisor refuted | its true ε (claim 1) | refuted by |",
             "|---|---|---|---|---|"]
    for label, what, r, true_eps, slow in rows:
        f = r["factor"]
        if f is None:
            lines.append(f"| `{label}` | {what} | none up to {FACTORS[-1]:g} | — | — |")
            continue
        eps = "—" if true_eps is None else f"{true_eps(f):.2g}"
        by = ", ".join(f"{a['probe']} (ε ≥ {a['epsilon_lb']:.2g})" for a in r["audits"])
        by += "".join(f"; its {a['probe']}: its own accountant refuses the divided noise" for a in r["refused"])
        note = f" (release audited at {slow_release} draws)" if slow else ""
        lines.append(f"| `{label}` | {what} | {f:g} | {eps} | {by}{note} |")
    lines.append("")
    lines.append(f"Divisors tried: {', '.join(f'{f:g}' for f in FACTORS)}; ε = 1, δ = 10⁻³ for the (ε, δ)-DP methods; "
                 "the gate at its defaults and seed 0 (one run each: a refutation holds at confidence 0.95, a pass "
                 "shows only that this gate did not see the leak).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="a Markdown file whose gate-power block is rewritten")
    ap.add_argument("--only", nargs="*", default=None, help="labels of the families to measure (default: all)")
    ap.add_argument("--slow-release", type=int, default=100, help="release draws per side for MST, AIM and MWEM")
    args = ap.parse_args(argv)
    rows = []
    for label, what, make, true_eps, slow in FAMILIES:
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        rows.append((label, what, measure(label, make, slow, args.slow_release), true_eps, slow))
    text = table(rows, args.slow_release)
    print(text)
    if args.out:
        from dpkit.core.marked import MarkedBlockError, write_marked

        try:
            write_marked(Path(args.out), "gate-power", text + "\n")
        except MarkedBlockError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
