"""Storage options of the GCS and Azure FileIOs: keys known, unknown keys refused, values
read, and secrets kept out of every message.

A store's options arrive as a mapping of strings (``storage_options``). Each store
accepts Paimon's keys (its Hadoop filesystem's, under the prefixes Paimon maps to them)
and the names of the library shoal uses for it; any other key is refused with
:class:`~shoal.errors.UnknownOptionError` naming the nearest known key. The value of a
key is never put in an error or a log line: a key's value may be a secret.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from shoal.errors import InvalidOptionError, UnknownOptionError

HIDDEN = "<hidden>"  # what an error shows for a value: it may be a secret
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


def normalized(
    options: Mapping[str, str], prefixes: Iterable[str], canonical: str
) -> dict[str, str]:
    """The options with each of ``prefixes`` replaced by ``canonical`` (as Paimon maps
    ``gs.`` to ``fs.gs.``); values are taken as strings."""
    ordered = sorted(prefixes, key=len, reverse=True)
    out: dict[str, str] = {}
    for key, value in options.items():
        name = key
        for prefix in ordered:
            if key.startswith(prefix):
                name = canonical + key[len(prefix) :]
                break
        out[name] = str(value)
    return out


def refuse_unknown(
    store: str, original: Iterable[str], normal: Iterable[str], known: Iterable[str]
) -> None:
    """Raise UnknownOptionError for the first key whose normalized form is not known.

    ``original`` and ``normal`` are the keys as given and as normalized, in the same
    order; ``known`` the normalized keys the store accepts (a key ending in ``.*``
    stands for any key with that prefix)."""
    known = list(known)
    exact = {k for k in known if not k.endswith("*")}
    prefixes = tuple(k[:-1] for k in known if k.endswith("*"))
    for given, key in zip(original, normal, strict=True):
        if key in exact or (prefixes and key.startswith(prefixes)):
            continue
        suggestion = nearest(key, exact)
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        raise UnknownOptionError(
            given,
            HIDDEN,
            f"{store} storage options take {', '.join(sorted(exact))}{hint}",
            suggestion,
        )


def nearest(key: str, known: Iterable[str]) -> str | None:
    lowered = {k.lower(): k for k in known}
    found = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[found[0]] if found else None


def boolean(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvalidOptionError(key, text, "give true or false")
