"""Error leaves declare their wire data in the class line; a misspelt keyword fails at import."""
import pytest

from emulators.runtime.errors import AdminError, EmulatorError


def test_class_keywords_set_the_leaf_data_and_keep_the_hierarchy():
    class Gone(AdminError, status=410, message="gone"):
        ...

    error = Gone()
    assert (error.status, error.message, error.type) == (410, "gone", "mockingbird_admin")
    assert isinstance(error, AdminError) and isinstance(error, EmulatorError)
    assert AdminError.status == 400  # the base keeps its own data


def test_a_misspelt_keyword_is_refused():
    with pytest.raises(TypeError, match="'stauts' is not an attribute"):
        class Typo(EmulatorError, stauts=404):
            ...
