"""What a generation run learns about its input before it starts: what identifies the input's
content (for the run's fingerprint) and, while it is read, which pairs repeat an earlier one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from transnli.common.digest import sha256_file
from transnli.generator.readers import NLIPair


def input_identity(source: str, fmt: str | None) -> dict:
    """What config.json records about the input and the run's fingerprint covers: a local file's
    size and the sha256 of its bytes (an edit of the same size is a different input), or the name
    of a hub dataset."""
    desc: dict = {"source": source, "format": fmt}
    path = Path(source)
    if not source.startswith("hf:") and path.is_file():
        desc["bytes"] = path.stat().st_size
        desc["sha256"] = sha256_file(path)
    return desc


class DuplicateCounter:
    """Counts the pairs whose premise and hypothesis repeat an earlier pair's. Kept are 8-byte
    digests, not the sentences, so a large input costs tens of MB at most."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self.count = 0
        self.first: NLIPair | None = None

    def watch(self, pairs: Iterable[NLIPair]) -> Iterator[NLIPair]:
        for pair in pairs:
            key = hashlib.blake2b(
                f"{pair.premise}\0{pair.hypothesis}".encode(), digest_size=8
            ).digest()
            if key in self._seen:
                self.count += 1
                self.first = self.first or pair
            else:
                self._seen.add(key)
            yield pair
