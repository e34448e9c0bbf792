"""A batch (:mod:`gem_eval.rl.batch`) read the ways trainers want it.

* :func:`token_rows` -- one row per completion token: what a token-level policy-gradient
  step multiplies (``advantage * logprob``, summed over the completion's tokens).
* :func:`trl_records` -- TRL's conversational form: ``prompt`` (a list of messages) and
  ``completion`` (a list of one assistant message), with the reward and advantage.

Both take the DataFrame that :func:`~gem_eval.rl.batch.read_batch` returns.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

TOKEN_COLUMNS = ("transition", "position", "token_id", "logprob", "advantage")


def token_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per completion token of every transition that has token ids: the
    transition's row number in ``frame``, the token's position in its completion, its id,
    its log-probability (``NaN`` when the server gave ids only) and the transition's
    advantage, the same for each of its tokens."""
    import pandas as pd

    rows: list[tuple[int, int, int, float, float]] = []
    for i, (ids, logprobs, advantage) in enumerate(
        zip(frame["completion_token_ids"], frame["logprobs"], frame["advantage"], strict=True)
    ):
        ids = _list(ids)
        if not ids:
            continue
        probs = _list(logprobs) or [float("nan")] * len(ids)
        if len(probs) != len(ids):
            raise ValueError(f"transition {i}: {len(ids)} token ids but {len(probs)} logprobs")
        rows += [
            (i, p, int(t), float(lp), float(advantage))
            for p, (t, lp) in enumerate(zip(ids, probs, strict=True))
        ]
    out: pd.DataFrame = pd.DataFrame(rows, columns=list(TOKEN_COLUMNS))
    return out


def trl_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each transition as a TRL conversational record: ``prompt`` and ``completion``
    (message lists), ``reward``, ``return`` and ``advantage``."""
    return [
        {
            "prompt": json.loads(prompt),
            "completion": [json.loads(completion)],
            "reward": float(reward),
            "return": float(g),
            "advantage": float(advantage),
        }
        for prompt, completion, reward, g, advantage in zip(
            frame["prompt"],
            frame["completion"],
            frame["reward"],
            frame["return"],
            frame["advantage"],
            strict=True,
        )
    ]


def _list(value: Any) -> list[Any]:
    """A list column's cell as a list (Parquet gives arrays, JSONL lists; null: [])."""
    if value is None:
        return []
    if isinstance(value, float):  # NaN: a missing list
        return []
    return list(value)
