"""Outside references for the tests: scikit-learn, ydf, scipy, and brute force.

Nothing here calls polars_eval. The brute-force versions loop over every distinct
threshold and recount the rows, the slow and obvious way, so that they share no code
(and no shortcut) with the sort + cumulative-sum implementations under test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

NAN = float("nan")


def _w(y: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    return np.ones(len(y), dtype=np.float64) if w is None else np.asarray(w, dtype=np.float64)


def keep(y: Any, s: Any, w: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays as float64 with the rows of zero weight removed (they carry no mass)."""
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    w = _w(y, w)
    m = w != 0
    return y[m], s[m], w[m]


# ---------------------------------------------------------------------------------------
# scikit-learn
# ---------------------------------------------------------------------------------------


def sk_threshold(name: str, y: Any, s: Any, w: Any = None, threshold: float = 0.5) -> float:
    """A threshold metric of scikit-learn at ``score >= threshold`` (NaN where undefined)."""
    y = np.asarray(y).astype(int)
    yhat = (np.asarray(s, dtype=np.float64) >= threshold).astype(int)
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
    if name in ("precision", "recall", "f1"):
        p, r, f, _ = skm.precision_recall_fscore_support(
            y, yhat, average="binary", sample_weight=w, zero_division=np.nan
        )
        return float({"precision": p, "recall": r, "f1": f}[name])
    if name == "mcc":
        return float(skm.matthews_corrcoef(y, yhat, sample_weight=w))
    if name == "cohen_kappa":
        return float(skm.cohen_kappa_score(y, yhat, sample_weight=w))
    if name == "balanced_accuracy":
        return float(skm.balanced_accuracy_score(y, yhat, sample_weight=w))
    if name == "accuracy":
        return float(skm.accuracy_score(y, yhat, sample_weight=w))
    raise KeyError(name)


def sk_confusion(y: Any, s: Any, w: Any = None, threshold: float = 0.5) -> dict[str, float]:
    """scikit-learn's confusion matrix as ``{tp, fp, tn, fn}``."""
    yhat = (np.asarray(s, dtype=np.float64) >= threshold).astype(int)
    cm = skm.confusion_matrix(np.asarray(y).astype(int), yhat, labels=[0, 1], sample_weight=w)
    tn, fp, fn, tp = (float(v) for v in cm.ravel())
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def sk_auc(y: Any, s: Any, w: Any = None) -> float:
    return float(skm.roc_auc_score(np.asarray(y).astype(int), s, sample_weight=w))


def sk_average_precision(y: Any, s: Any, w: Any = None) -> float:
    return float(skm.average_precision_score(np.asarray(y).astype(int), s, sample_weight=w))


def sk_logloss(y: Any, p: Any, w: Any = None) -> float:
    return float(skm.log_loss(np.asarray(y).astype(int), p, sample_weight=w, labels=[0, 1]))


def sk_brier(y: Any, p: Any, w: Any = None) -> float:
    return float(skm.brier_score_loss(np.asarray(y).astype(int), p, sample_weight=w))


def sk_roc_curve(y: Any, s: Any, w: Any = None) -> dict[str, np.ndarray]:
    fpr, tpr, thr = skm.roc_curve(
        np.asarray(y).astype(int), s, sample_weight=w, drop_intermediate=False
    )
    return {"threshold": thr, "fpr": fpr, "tpr": tpr}


def sk_pr_curve(y: Any, s: Any, w: Any = None) -> dict[str, np.ndarray]:
    """scikit-learn's PR curve turned to descending thresholds, its final (1, 0) point dropped."""
    precision, recall, thr = skm.precision_recall_curve(
        np.asarray(y).astype(int), s, sample_weight=w
    )
    return {
        "threshold": thr[::-1],
        "precision": precision[:-1][::-1],
        "recall": recall[:-1][::-1],
    }


def sk_calibration(y: Any, p: Any, bins: int) -> dict[str, np.ndarray]:
    """scikit-learn's uniform reliability curve (non-empty bins, ascending)."""
    prob_true, prob_pred = calibration_curve(
        np.asarray(y).astype(int), p, n_bins=bins, strategy="uniform"
    )
    return {"positive_rate": prob_true, "mean_score": prob_pred}


def ks_2samp(y: Any, s: Any) -> float:
    """Unweighted KS statistic between the score distributions of the two classes (scipy)."""
    from scipy.stats import ks_2samp as ks

    y = np.asarray(y)
    s = np.asarray(s, dtype=np.float64)
    return float(ks(s[y == 1], s[y == 0]).statistic)


# ---------------------------------------------------------------------------------------
# ydf (scores go through float32 inside ydf: give float32-representable scores)
# ---------------------------------------------------------------------------------------

YDF_XY = {
    # our name: ydf field of the ROC proto, ydf option list
    "precision_at_recall": ("precision_at_recall", "precision_at_recall"),
    "recall_at_precision": ("recall_at_precision", "recall_at_precision"),
    "precision_at_volume": ("precision_at_volume", "precision_at_volume"),
    "recall_at_fpr": ("recall_at_false_positive_rate", "recall_at_false_positive_rate"),
    "fpr_at_recall": ("false_positive_rate_at_recall", "false_positive_rate_at_recall"),
}


def ydf_evaluate(
    y: Any, s: Any, w: Any = None, xy: dict[str, Sequence[float]] | None = None
) -> Any:
    """``ydf.evaluate_predictions`` on binary labels; ``xy`` asks for X@Y values too.

    The X@Y values are computed by YDF's C++ but not exposed by its Python API: the options
    are added by patching ``ydf.metric.evaluate._build_evaluation_options`` for this call
    and read back from the evaluation proto (private; a test skips if it moved).
    """
    import ydf
    from ydf.metric import evaluate as ydf_eval

    scores = np.asarray(s, dtype=np.float32)
    labels = np.asarray(y).astype(np.int64)
    weights = None if w is None else np.asarray(w, dtype=np.float32)
    original = ydf_eval._build_evaluation_options

    def patched(*args: Any, **kwargs: Any) -> Any:
        options = original(*args, **kwargs)
        for name, values in (xy or {}).items():
            getattr(options.classification, YDF_XY[name][1]).extend(values)
        return options

    ydf_eval._build_evaluation_options = patched
    try:
        return ydf.evaluate_predictions(scores, labels, ydf.Task.CLASSIFICATION, weights=weights)
    finally:
        ydf_eval._build_evaluation_options = original


def ydf_pr_auc(y: Any, s: Any, w: Any = None) -> float:
    return float(ydf_evaluate(y, s, w).characteristics[0].pr_auc)


def ydf_xy(y: Any, s: Any, w: Any, name: str, values: Sequence[float]) -> list[float]:
    """YDF's X@Y values of metric ``name`` at each constraint of ``values``."""
    ev = ydf_evaluate(y, s, w, xy={name: values})
    roc = ev._evaluation_proto.classification.rocs[2]  # index 2: the positive class "1"
    got = {m.y_metric_constraint: m.x_metric_value for m in getattr(roc, YDF_XY[name][0])}
    if not got:
        raise LookupError(f"ydf returned no {name} values: its private options API moved")
    return [float(got[np.float64(v)]) if np.float64(v) in got else NAN for v in values]


# ---------------------------------------------------------------------------------------
# Brute force over thresholds
# ---------------------------------------------------------------------------------------


def points(y: Any, s: Any, w: Any = None) -> dict[str, Any]:
    """Weighted counts at every distinct threshold (descending), by recounting the rows."""
    y, s, w = keep(y, s, w)
    thr = np.unique(s)[::-1]
    tp = np.array([w[(s >= t) & (y == 1)].sum() for t in thr])
    fp = np.array([w[(s >= t) & (y == 0)].sum() for t in thr])
    P = float(w[y == 1].sum())
    N = float(w[y == 0].sum())
    return {"threshold": thr, "tp": tp, "fp": fp, "tn": N - fp, "fn": P - tp, "P": P, "N": N}


def _div(a: float, b: float) -> float:
    return a / b if b != 0 else NAN


def point_metric(name: str, tp: float, fp: float, tn: float, fn: float, beta: float = 1.0) -> float:
    """One threshold metric from counts; NaN where undefined."""
    if name == "accuracy":
        return _div(tp + tn, tp + fp + tn + fn)
    if name in ("f1", "f_beta"):
        b2 = 1.0 if name == "f1" else beta * beta
        return _div((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp)
    if name == "mcc":
        den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return _div(tp * tn - fp * fn, den)
    raise KeyError(name)


def brute_ks(y: Any, s: Any, w: Any = None) -> float:
    pt = points(y, s, w)
    if pt["P"] == 0 or pt["N"] == 0:
        return NAN
    return float(np.max(np.abs(pt["tp"] / pt["P"] - pt["fp"] / pt["N"])))


def brute_max(name: str, y: Any, s: Any, w: Any = None, beta: float = 1.0) -> float:
    """Max of a threshold metric over the distinct scores (undefined points skipped)."""
    return brute_best(name, y, s, w, beta)["value"]


def brute_best(name: str, y: Any, s: Any, w: Any = None, beta: float = 1.0) -> dict[str, float]:
    """The highest threshold attaining the max of a metric, and that max."""
    pt = points(y, s, w)
    if pt["P"] == 0 or pt["N"] == 0:
        return {"threshold": NAN, "value": NAN}
    best_t, best_v = NAN, -math.inf
    for i, t in enumerate(pt["threshold"]):  # descending: keep the first maximum
        v = point_metric(name, pt["tp"][i], pt["fp"][i], pt["tn"][i], pt["fn"][i], beta)
        if not math.isnan(v) and v > best_v:
            best_t, best_v = float(t), v
    return {"threshold": best_t, "value": best_v if best_v > -math.inf else NAN}


def brute_xy(name: str, y: Any, s: Any, w: Any, value: float) -> float:
    """YDF's conservative X@Y by its definition (metric.cc, ComputeXAtYMetrics).

    Curve points: the empty prediction (tp = fp = 0, precision 1), then every distinct
    threshold in descending order. ``precision_at_recall`` / ``precision_at_volume`` /
    ``fpr_at_recall``: the first point scanning from the highest threshold down that meets
    the constraint; ``recall_at_precision`` / ``recall_at_fpr``: the first point scanning
    from the lowest threshold up. NaN when no point qualifies or a class is absent.
    """
    pt = points(y, s, w)
    P, N = pt["P"], pt["N"]
    if P == 0 or N == 0:
        return NAN
    rows = [(0.0, 0.0)] + list(zip(pt["tp"], pt["fp"], strict=True))
    pts = []
    for tp, fp in rows:
        pts.append(
            {
                "recall": tp / P,
                "fpr": fp / N,
                "precision": tp / (tp + fp) if tp + fp > 0 else 1.0,
                "volume": (tp + fp) / (P + N),
            }
        )
    spec = {
        "precision_at_recall": ("recall", ">=", "precision", False),
        "precision_at_volume": ("volume", ">=", "precision", False),
        "fpr_at_recall": ("recall", ">=", "fpr", False),
        "recall_at_precision": ("precision", ">=", "recall", True),
        "recall_at_fpr": ("fpr", "<=", "recall", True),
    }
    constraint, op, target, from_low = spec[name]
    order = reversed(pts) if from_low else pts
    for p in order:
        ok = p[constraint] >= value if op == ">=" else p[constraint] <= value
        if ok:
            return float(p[target])
    return NAN


def brute_pr_auc(y: Any, s: Any, w: Any = None) -> float:
    """Lower trapezoid area of the PR curve from (recall 0, precision 1) (YDF's rule)."""
    pt = points(y, s, w)
    if pt["P"] == 0 or pt["N"] == 0:
        return NAN
    rec = [0.0] + list(pt["tp"] / pt["P"])
    prec = [1.0] + list(pt["tp"] / (pt["tp"] + pt["fp"]))
    return float(
        sum((prec[i] + prec[i - 1]) / 2 * (rec[i] - rec[i - 1]) for i in range(1, len(rec)))
    )


def brute_auc_pairs(y: Any, s: Any, w: Any = None) -> float:
    """AUC as the weighted share of (positive, negative) pairs ordered right, ties ½."""
    y, s, w = keep(y, s, w)
    pos, neg = y == 1, y == 0
    if not pos.any() or not neg.any():
        return NAN
    sp, wp, sn, wn = s[pos], w[pos], s[neg], w[neg]
    win = (sp[:, None] > sn[None, :]) + 0.5 * (sp[:, None] == sn[None, :])
    return float((wp[:, None] * wn[None, :] * win).sum() / (wp.sum() * wn.sum()))


def brute_threshold_table(
    y: Any, s: Any, w: Any = None, n_thresholds: int | None = None
) -> dict[str, np.ndarray]:
    """Counts and rates at every distinct threshold, or at the q volume quantiles."""
    pt = points(y, s, w)
    tp, fp, tn, fn = pt["tp"], pt["fp"], pt["tn"], pt["fn"]
    rows = list(range(len(tp)))
    if n_thresholds is not None:
        volume = (tp + fp) / (pt["P"] + pt["N"])
        chosen: list[int] = []
        for j in range(1, n_thresholds + 1):
            i = next(i for i in rows if volume[i] >= j / n_thresholds - 1e-12)
            if i not in chosen:
                chosen.append(i)
        rows = chosen
    out: dict[str, list[float]] = {k: [] for k in ("threshold", "tp", "fp", "tn", "fn")}
    for k in ("tpr", "fpr", "precision", "recall", "specificity", "f1", "accuracy", "mcc"):
        out[k] = []
    for i in rows:
        a, b, c, d = tp[i], fp[i], tn[i], fn[i]
        out["threshold"].append(pt["threshold"][i])
        out["tp"].append(a)
        out["fp"].append(b)
        out["tn"].append(c)
        out["fn"].append(d)
        out["tpr"].append(_div(a, a + d))
        out["fpr"].append(_div(b, b + c))
        out["precision"].append(_div(a, a + b))
        out["recall"].append(_div(a, a + d))
        out["specificity"].append(_div(c, c + b))
        out["f1"].append(point_metric("f1", a, b, c, d))
        out["accuracy"].append(point_metric("accuracy", a, b, c, d))
        out["mcc"].append(point_metric("mcc", a, b, c, d))
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def brute_lorenz(y: Any, s: Any, w: Any = None) -> dict[str, np.ndarray]:
    pt = points(y, s, w)
    total = pt["P"] + pt["N"]
    return {
        "threshold": np.r_[np.inf, pt["threshold"]],
        "population": np.r_[0.0, (pt["tp"] + pt["fp"]) / total],
        "positives": np.r_[0.0, pt["tp"] / pt["P"]] if pt["P"] else np.full(1 + len(pt["tp"]), NAN),
    }


def brute_gain_table(y: Any, s: Any, w: Any = None, bins: int = 10) -> dict[str, np.ndarray]:
    """Gain table: blocks of tied scores (descending) go whole to bin floor(weight before / total * bins)."""
    y, s, w = keep(y, s, w)
    total, P, N = w.sum(), w[y == 1].sum(), w[y == 0].sum()
    blocks: dict[int, dict[str, float]] = {}
    before = 0.0
    for t in np.unique(s)[::-1]:
        m = s == t
        b = min(max(int(math.floor(before / total * bins)), 0), bins - 1)
        d = blocks.setdefault(b, {"pos": 0.0, "neg": 0.0, "min": t})
        d["pos"] += w[m & (y == 1)].sum()
        d["neg"] += w[m & (y == 0)].sum()
        d["min"] = t
        before += w[m].sum()
    out: dict[str, list[float]] = {k: [] for k in _GAIN}
    cum_pos = cum_neg = 0.0
    rate = P / total
    for b in sorted(blocks):
        d = blocks[b]
        count = d["pos"] + d["neg"]
        cum_pos += d["pos"]
        cum_neg += d["neg"]
        row = {
            "bin": b + 1,
            "min_score": d["min"],
            "count": count,
            "positives": d["pos"],
            "negatives": d["neg"],
            "positive_rate": d["pos"] / count,
            "pct_positives": _div(d["pos"], P),
            "cum_pct_positives": _div(cum_pos, P),
            "cum_pct_population": (cum_pos + cum_neg) / total,
            "lift": _div(d["pos"] / count, rate),
            "cum_lift": _div(cum_pos / (cum_pos + cum_neg), rate),
            "ks": _div(cum_pos, P) - _div(cum_neg, N),
        }
        for k in _GAIN:
            out[k].append(row[k])
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


_GAIN = (
    "bin",
    "min_score",
    "count",
    "positives",
    "negatives",
    "positive_rate",
    "pct_positives",
    "cum_pct_positives",
    "cum_pct_population",
    "lift",
    "cum_lift",
    "ks",
)


def brute_calibration(y: Any, p: Any, w: Any = None, bins: int = 10) -> dict[str, np.ndarray]:
    """Weighted reliability table with scikit-learn's uniform bin edges (non-empty bins)."""
    y, p, w = keep(y, p, w)
    edges = np.linspace(0.0, 1.0, bins + 1)
    ids = np.searchsorted(edges[1:-1], p)
    out: dict[str, list[float]] = {
        k: [] for k in ("bin", "mean_score", "positive_rate", "count", "lower", "upper")
    }
    for b in range(bins):
        m = ids == b
        if not m.any():
            continue
        out["bin"].append(b + 1)
        out["lower"].append(edges[b])
        out["upper"].append(edges[b + 1])
        out["count"].append(w[m].sum())
        out["mean_score"].append((w[m] * p[m]).sum() / w[m].sum())
        out["positive_rate"].append((w[m] * y[m]).sum() / w[m].sum())
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def brute_ece(y: Any, p: Any, w: Any = None, bins: int = 10) -> float:
    t = brute_calibration(y, p, w, bins)
    if t["count"].sum() == 0:
        return NAN
    return float(
        (t["count"] * np.abs(t["positive_rate"] - t["mean_score"])).sum() / t["count"].sum()
    )
