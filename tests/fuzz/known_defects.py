"""Defects this fuzz test found outside the codec/dispatcher layer, reported to their owners, not fixed here.

Each is kept out of the verdict in the narrowest way that works, so that the
test stays a check of everything else: a frame that would trigger a defect
that stalls the broker is held back before sending; a defect that only costs
the sender its connection (an unexpected exception in a handler) is tolerated
by its traceback. Delete an entry once its fix is merged; the test then
covers that path again.
"""

from __future__ import annotations

#: (what, predicate on the exact bytes sent): such frames are not sent.
HELD_BACK: list = []

#: (what, api key, text in the traceback): such an unexpected handler error does not fail the test.
TOLERATED_ERRORS: list = []
