"""`read_file`'s one-pass line window keeps exactly what the line-by-line path keeps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.tools.files import read_file


class LineByLine(read_file._Lines):
    """The window with its one-pass shortcut turned off."""

    def _whole_lines(self, chunk: bytes, newlines: int) -> bool:
        del chunk, newlines
        return False


PIECES = st.lists(
    st.one_of(
        st.binary(max_size=30),
        st.sampled_from([b"\n", b"a\n", "é\n".encode(), b"\xe2\x82\n", b"x" * 2500 + b"\n"]),
    ),
    max_size=30,
)


@given(PIECES, st.integers(1, 20), st.integers(1, 30), st.integers(1, 40), st.booleans())
def test_both_paths_keep_the_same_lines(
    pieces: list[bytes], first: int, limit: int, size: int, secret: bool
) -> None:
    """Any bytes, any window, any chunking, with or without a secret to redact."""
    data = b"".join(pieces)
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    secrets = frozenset({"aa"}) if secret else frozenset()
    fast = read_file._Lines(first, first + limit - 1, secrets)
    slow = LineByLine(first, first + limit - 1, secrets)
    for chunk in chunks:
        fast.feed(chunk)
        slow.feed(chunk)
    assert fast.finish() == slow.finish()
    assert (fast.kept, fast.kept_bytes, fast.full) == (slow.kept, slow.kept_bytes, slow.full)
