"""Bundled example data for ``polars-eval demo`` and the README, generated in code.

Nothing is downloaded and no file ships with the package: every data set is drawn from a
fixed seed with numpy's ``PCG64`` generator, so the same call gives the same frame.

The main example is a synthetic credit-scoring validation set: loan applications with a
product segment, a sales channel and a region, the observed default flag (``defaulted``)
and the probability of default predicted by two models (``pd_score`` for the model in
production, ``pd_challenger`` for a candidate). The model is built to be weaker on
broker-sourced applications, so the per-segment tables have something to show.
"""

from __future__ import annotations

import numpy as np
import polars as pl

SEED = 20240601

# product segment -> (share of applications, default rate on the logit scale, typical amount)
_SEGMENTS = {
    "credit_card": (0.40, -3.0, 4_000.0),
    "personal_loan": (0.30, -3.4, 12_000.0),
    "auto_loan": (0.20, -3.8, 25_000.0),
    "mortgage": (0.10, -4.6, 220_000.0),
}
# sales channel -> (share, correlation of the model's signal with the true risk)
_CHANNELS = {"branch": (0.45, 0.85), "online": (0.40, 0.80), "broker": (0.15, 0.55)}
_REGIONS = ("north", "south", "east", "west")
# the applicant's age band (a synthetic sensitive attribute for the fairness example):
# band -> its share among the applications of each channel (online applicants are younger,
# broker-sourced ones older, so the model's weakness on brokers shows as a disparity)
_AGE_BANDS = ("18-29", "30-44", "45-59", "60+")
_AGE_BY_CHANNEL = {
    "branch": (0.15, 0.35, 0.30, 0.20),
    "online": (0.40, 0.35, 0.18, 0.07),
    "broker": (0.08, 0.27, 0.35, 0.30),
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def credit_scoring(n: int = 20_000, *, seed: int = SEED) -> pl.DataFrame:
    """A synthetic credit-scoring validation set (one row per loan application).

    Columns: ``application_id``, ``segment`` (product), ``channel``, ``region``,
    ``loan_amount`` (a natural exposure weight), ``defaulted`` (0/1, about 8 % overall),
    ``pd_score`` (the production model's probability of default, slightly miscalibrated,
    weaker on the ``broker`` channel), ``pd_challenger`` (a better candidate model) and
    ``age_band`` (the applicant's age band, ``18-29`` to ``60+``: a synthetic sensitive
    attribute for the fairness example, older on the broker channel, younger online;
    drawn from a generator of its own, so the other columns are those of the versions
    without it). ``application_date`` (180 days from 2024-01-01, brokers more often late).
    Scores are stored with 4 decimals, so tied scores occur as they do in
    practice.

    Examples
    --------
    >>> from polars_eval._demo import credit_scoring
    >>> df = credit_scoring(1_000)
    >>> df.columns
    ['application_id', 'segment', 'channel', 'region', 'loan_amount', 'defaulted', 'pd_score', 'pd_challenger', 'age_band', 'application_date']
    >>> df.equals(credit_scoring(1_000))
    True
    """
    rng = np.random.default_rng(seed)
    segments = np.array(list(_SEGMENTS))
    seg_share = np.array([v[0] for v in _SEGMENTS.values()])
    seg_logit = np.array([v[1] for v in _SEGMENTS.values()])
    seg_amount = np.array([v[2] for v in _SEGMENTS.values()])
    channels = np.array(list(_CHANNELS))
    ch_share = np.array([v[0] for v in _CHANNELS.values()])
    ch_rho = np.array([v[1] for v in _CHANNELS.values()])

    seg = rng.choice(len(segments), size=n, p=seg_share)
    ch = rng.choice(len(channels), size=n, p=ch_share)
    region = rng.integers(0, len(_REGIONS), size=n)
    amount = np.round(seg_amount[seg] * rng.lognormal(0.0, 0.5, size=n), -1)

    risk = rng.standard_normal(n)  # the borrower's true (unobserved) risk
    true_pd = _sigmoid(seg_logit[seg] + 0.25 * (region == 1) + 1.5 * risk)
    defaulted = (rng.random(n) < true_pd).astype(np.int8)

    def model(rho: np.ndarray, shift: float) -> np.ndarray:
        signal = rho * risk + np.sqrt(1.0 - rho**2) * rng.standard_normal(n)
        return np.round(_sigmoid(seg_logit[seg] + shift + 1.5 * signal), 4)

    pd_score = model(ch_rho[ch], 0.3)
    pd_challenger = model(np.minimum(ch_rho[ch] + 0.08, 0.95), 0.0)
    age_share = np.cumsum([_AGE_BY_CHANNEL[c] for c in channels], axis=1)[ch]
    age_u = np.random.default_rng([seed, 1]).random(n)
    age = np.minimum((age_u[:, None] >= age_share).sum(axis=1), len(_AGE_BANDS) - 1)
    return pl.DataFrame(
        {
            "application_id": np.arange(1, n + 1, dtype=np.int64),
            "segment": segments[seg],
            "channel": channels[ch],
            "region": np.array(_REGIONS)[region],
            "loan_amount": amount,
            "defaulted": defaulted,
            "pd_score": pd_score,
            "pd_challenger": pd_challenger,
            "age_band": np.array(_AGE_BANDS)[age],
            "application_date": _application_dates(channels[ch] == "broker", seed),
        }
    )


def _application_dates(broker: np.ndarray, seed: int) -> np.ndarray:
    """The day of each application over 180 days from 2024-01-01 (a generator of its own:
    the other columns keep their values). Broker applications come more often late in the
    period, so the production model's AUC drifts down over time (monitoring, SPEC §13)."""
    u = np.random.default_rng(seed + 100).random(broker.size)
    day = np.floor(180.0 * np.where(broker, np.sqrt(u), u)).astype(np.int64)
    return np.datetime64("2024-01-01", "D") + day


def property_valuations(n: int = 5_000, *, seed: int = SEED) -> pl.DataFrame:
    """Synthetic sale prices and an automated valuation model's predictions.

    Columns: ``property_id``, ``region``, ``property_type`` (``flat`` or ``house``),
    ``floor_area_m2``, ``sale_price`` and ``predicted_price``. The model's error is
    multiplicative (about 10 %), larger for houses in the ``north`` region, and biased
    upwards in the ``south``.

    Examples
    --------
    >>> from polars_eval._demo import property_valuations
    >>> property_valuations(100).columns
    ['property_id', 'region', 'property_type', 'floor_area_m2', 'sale_price', 'predicted_price']
    """
    rng = np.random.default_rng(seed + 1)
    region = rng.integers(0, len(_REGIONS), size=n)
    house = rng.random(n) < 0.45
    area = np.round(np.where(house, rng.normal(130, 35, n), rng.normal(70, 20, n)).clip(25), 0)
    price_m2 = np.array([3_200.0, 4_100.0, 3_600.0, 5_000.0])[region]
    price = np.round(area * price_m2 * rng.lognormal(0.0, 0.15, n), -2)
    noise = np.where(house & (region == 0), 0.20, 0.10)
    bias = np.where(region == 1, 0.05, 0.0)
    predicted = np.round(price * np.exp(bias + noise * rng.standard_normal(n)), -2)
    return pl.DataFrame(
        {
            "property_id": np.arange(1, n + 1, dtype=np.int64),
            "region": np.array(_REGIONS)[region],
            "property_type": np.where(house, "house", "flat"),
            "floor_area_m2": area,
            "sale_price": price,
            "predicted_price": predicted,
        }
    )


def search_log(n_queries: int = 600, items: int = 20, *, seed: int = SEED) -> pl.DataFrame:
    """A synthetic search log: one row per (query, shown document).

    Columns: ``query_id``, ``market`` (``uk``, ``de``, ``fr``), ``device``
    (``desktop``, ``mobile``), ``doc_id``, ``relevance`` (graded 0-4, most documents 0)
    and ``score`` (the ranker's score, 2 decimals, so ties occur). The ranker is weaker
    in the ``fr`` market. Some queries have no relevant document.

    Examples
    --------
    >>> from polars_eval._demo import search_log
    >>> search_log(10, 5).shape
    (50, 6)
    """
    rng = np.random.default_rng(seed + 2)
    n = n_queries * items
    query = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), items)
    markets = np.array(["uk", "de", "fr"])
    market = markets[rng.choice(3, size=n_queries, p=[0.5, 0.3, 0.2])][query - 1]
    device = np.array(["desktop", "mobile"])[rng.integers(0, 2, n_queries)][query - 1]
    latent = rng.standard_normal(n)
    relevance = np.digitize(latent, [0.8, 1.4, 1.9, 2.4]).astype(np.int64)
    quality = np.where(market == "fr", 0.8, 1.5)
    score = np.round(quality * latent + rng.standard_normal(n), 2)
    return pl.DataFrame(
        {
            "query_id": query,
            "market": market,
            "device": device,
            "doc_id": np.tile(np.arange(1, items + 1, dtype=np.int64), n_queries),
            "relevance": relevance,
            "score": score,
        }
    )


GRADES = ("A", "B", "C", "D", "E")


def rating_grades(n: int = 5_000, *, seed: int = SEED) -> pl.DataFrame:
    """Synthetic credit ratings of companies: five grades, a model's probabilities.

    Columns: ``company_id``, ``sector``, ``grade`` (the analysts' grade, ``A`` best to
    ``E``), ``p_A`` ... ``p_E`` (the model's class probabilities, summing to 1),
    ``predicted_grade`` (the most probable grade). Neighbouring grades are confused
    most; the model is weaker in the ``energy`` sector.

    Examples
    --------
    >>> from polars_eval._demo import rating_grades
    >>> rating_grades(100).columns
    ['company_id', 'sector', 'grade', 'p_A', 'p_B', 'p_C', 'p_D', 'p_E', 'predicted_grade']
    """
    rng = np.random.default_rng(seed + 3)
    sectors = np.array(["industrials", "retail", "energy", "technology"])
    sector = rng.choice(len(sectors), size=n, p=[0.35, 0.25, 0.15, 0.25])
    strength = rng.normal(0.0, 1.0, n)  # the company's true credit quality
    grade = np.digitize(strength, [-1.2, -0.4, 0.4, 1.2])[:, None]  # 0 = E ... 4 = A
    grade = 4 - grade[:, 0]  # 0 = A (best) ... 4 = E
    noise = np.where(sectors[sector] == "energy", 0.9, 0.45)
    seen = strength + noise * rng.standard_normal(n)
    centres = np.array([1.6, 0.8, 0.0, -0.8, -1.6])  # grade A ... E on the strength scale
    logits = -2.0 * (seen[:, None] - centres[None, :]) ** 2
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    labels = np.array(GRADES)
    data: dict[str, object] = {
        "company_id": np.arange(1, n + 1, dtype=np.int64),
        "sector": sectors[sector],
        "grade": labels[grade],
    }
    data.update({f"p_{g}": proba[:, i] for i, g in enumerate(GRADES)})
    data["predicted_grade"] = labels[proba.argmax(axis=1)]
    return pl.DataFrame(data)


def branch_demand(branches: int = 12, *, seed: int = SEED) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Monthly loan applications per branch: a history and 6-month-ahead forecasts.

    Returns ``(history, forecasts)``. ``history``: ``branch``, ``month`` (a date, 36
    months) and ``applications``. ``forecasts``: for each of 3 forecast origins
    (``cutoff``, the month the forecast was made) the next 6 months, with ``branch``,
    ``month``, ``cutoff``, ``region``, ``applications`` (the actual), ``forecast`` (a
    seasonal model's point forecast) and ``lo80`` / ``hi80`` (its 80 % interval). The
    error grows with the lead time.

    Examples
    --------
    >>> from polars_eval._demo import branch_demand
    >>> history, forecasts = branch_demand(2)
    >>> history.shape, forecasts.shape
    ((72, 3), (36, 8))
    """
    rng = np.random.default_rng(seed + 4)
    months = 48
    dates = pl.date_range(
        pl.date(2021, 1, 1), pl.date(2024, 12, 1), interval="1mo", eager=True
    ).to_numpy()
    t = np.arange(months)
    rows = []
    for b in range(branches):
        level = rng.uniform(80, 400)
        trend = rng.normal(0.004, 0.003)
        season = 1.0 + 0.15 * np.sin(2 * np.pi * (t + rng.integers(0, 12)) / 12)
        mean = level * season * np.exp(trend * t)
        actual = rng.poisson(mean).astype(np.float64)
        rows.append((f"B{b + 1:02d}", _REGIONS[b % len(_REGIONS)], mean, actual))
    history = pl.DataFrame(
        {
            "branch": np.repeat([r[0] for r in rows], 36),
            "month": np.tile(dates[:36], branches),
            "applications": np.concatenate([r[3][:36] for r in rows]),
        }
    )
    parts = []
    for origin in (35, 38, 41):  # forecasts made at the end of these months
        for name, region, mean, actual in rows:
            lead = np.arange(1, 7)
            target = origin + lead
            scale = 0.05 + 0.02 * lead
            forecast = np.round(mean[target] * np.exp(rng.normal(0.0, scale)), 1)
            half = 1.2816 * np.sqrt(mean[target] + (scale * mean[target]) ** 2)
            parts.append(
                pl.DataFrame(
                    {
                        "branch": [name] * 6,
                        "month": dates[target],
                        "cutoff": np.repeat(dates[origin], 6),
                        "region": [region] * 6,
                        "applications": actual[target],
                        "forecast": forecast,
                        "lo80": np.round(forecast - half, 1),
                        "hi80": np.round(forecast + half, 1),
                    }
                )
            )
    return history, pl.concat(parts)


def weaker_ranker(log: pl.DataFrame, *, seed: int = SEED) -> pl.DataFrame:
    """The search log scored by a second, weaker ranker (more noise on the same signal),
    to compare two systems (``demo_data/run_bm25.txt``).

    Examples
    --------
    >>> from polars_eval._demo import search_log, weaker_ranker
    >>> weaker_ranker(search_log(10, 5)).columns
    ['query_id', 'market', 'device', 'doc_id', 'relevance', 'score']
    """
    rng = np.random.default_rng(seed + 5)
    noise = rng.standard_normal(log.height) * 1.5
    return log.with_columns((pl.col("score") + noise).round(2).alias("score"))


def trec_files(log: pl.DataFrame) -> tuple[str, str]:
    """The search log as the text of a TREC run file and a TREC qrels file.

    ``log`` is a frame of :func:`search_log`. The run has one line per (query, document),
    ``query Q0 doc rank score tag``, documents ranked by score, highest first (ties by
    document id, highest first, the order trec_eval uses); the qrels have one line per
    judged document, ``query 0 doc relevance``. Document ids are written ``d<doc_id>``.

    Examples
    --------
    >>> from polars_eval._demo import search_log, trec_files
    >>> run, qrels = trec_files(search_log(1, 6))
    >>> print(run, end="")
    1 Q0 d5 1 -0.17 demo
    1 Q0 d2 2 -0.24 demo
    1 Q0 d4 3 -0.52 demo
    1 Q0 d6 4 -1.29 demo
    1 Q0 d3 5 -2.86 demo
    1 Q0 d1 6 -2.86 demo
    >>> print(qrels.splitlines()[0])
    1 0 d1 0
    """
    docs = pl.format("d{}", "doc_id").alias("doc")
    run = (
        log.sort(["query_id", "score", "doc_id"], descending=[False, True, True])
        .select(
            pl.col("query_id"),
            pl.lit("Q0").alias("q0"),
            docs,
            pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"),
            pl.col("score"),
            pl.lit("demo").alias("tag"),
        )
        .write_csv(separator=" ", include_header=False)
    )
    qrels = (
        log.sort(["query_id", "doc_id"])
        .select(pl.col("query_id"), pl.lit("0").alias("iteration"), docs, pl.col("relevance"))
        .write_csv(separator=" ", include_header=False)
    )
    return run, qrels
