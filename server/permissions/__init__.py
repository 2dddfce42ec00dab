"""Human in the loop, without I/O: who must ask (``policy``), what an answer means
(``answers``), and what a tree still waits for, read back from its stored events (``ledger``).

The runtime's live side (the waiting calls, first-answer-wins, timeouts) is
``server/runtime/permissions.py``; the contract is docs/permissions.md.
"""
