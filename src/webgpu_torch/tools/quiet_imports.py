"""torchao without the log records it writes that concern no user of webgpu_torch.

transformers' modeling code imports torchao when it is installed (the test extra installs it). torchao's own
import logs, through the "torchao" logger, a "Failed to load …/_C_….so" line for each compiled extension it
ships that this machine's torch cannot load (the wheel's are CUDA kernels: webgpu_torch calls none). And as
its modules are imported, torchao registers its Enums as pytree constants, which torch logs as deprecated
through "torch.utils._pytree" (a notice for torchao's maintainers). `import_torchao()` drops exactly those
records: the first while it imports torchao, the second for torchao's classes from then on; every other
record of either logger passes.
"""

from __future__ import annotations

import contextlib
import logging


def _not_extension_failure(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Failed to load ")


def _not_torchao_enum_notice(record: logging.LogRecord) -> bool:
    cls = record.args[0] if isinstance(record.args, tuple) and record.args else None
    return not (isinstance(cls, type) and cls.__module__.startswith("torchao.")
                and "is an Enum subclass" in str(record.msg))


def import_torchao() -> None:
    """Imports torchao, when installed, quietly (see above): called before anything imports transformers'
    models, it leaves their imports of torchao nothing to log."""
    logging.getLogger("torch.utils._pytree").addFilter(_not_torchao_enum_notice)  # addFilter skips one it has
    log = logging.getLogger("torchao")
    log.addFilter(_not_extension_failure)
    try:
        with contextlib.suppress(ImportError):
            import torchao  # noqa: F401
    finally:
        log.removeFilter(_not_extension_failure)
