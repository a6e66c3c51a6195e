# Type hints for streamblur._log, a private module (FFmpeg's log level). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import set_log_level as set_log_level
