import pytest

from reference.spark import start_spark


@pytest.fixture(scope="module")
def spark(request):
    """One Spark session per module: starting one takes tens of seconds on a busy 2-core machine."""
    session = start_spark(request.module.__name__)
    yield session
    session.stop()
