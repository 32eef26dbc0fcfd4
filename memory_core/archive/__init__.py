"""The portable archive: its record format, how it is read and written, and what a
store's own bulk transfer works with.

:mod:`.records` (the record kinds, their fields and checks), :mod:`.files` (JSON Lines,
gzip, written beside the target and renamed in place once complete), :mod:`.report`
(:class:`~.report.TransferReport`), :mod:`.hooks` (:class:`~.hooks.BulkTransfer`, the
import's state and rules), :mod:`.errors`. These import nothing above the core's own
leaves, so a store (through :mod:`memory_core.store`), the store interface and expiry
archives use them without depending on :mod:`memory_core.transfer`, which moves memory
between backends over the public API and re-exports the public names of this package.
"""
