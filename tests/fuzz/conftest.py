import pytest
from fuzz import run


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """The fuzz seed corpus (tests/fuzz/seeds.py), built once per session."""
    return run.build_corpus(tmp_path_factory.mktemp("fuzz-seeds"))
