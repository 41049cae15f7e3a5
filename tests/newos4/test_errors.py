"""Chat error leaves declare status and message in the class line; a misspelt keyword fails."""
import pytest

from spaces.newos4.errors import ChatError, Gone, ThreadNotFound


def test_leaves_carry_their_class_line_data():
    assert (Gone.status, Gone().message) == (410, "gone")
    assert (ThreadNotFound.status, ThreadNotFound().message) == (404, "no such thread")
    assert issubclass(ThreadNotFound, ChatError) and ChatError.status == 500


def test_a_misspelt_keyword_is_refused():
    with pytest.raises(TypeError, match="'mesage' is not an attribute"):
        class Typo(ChatError, mesage="x"):
            ...
