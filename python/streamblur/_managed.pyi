# Type hints for streamblur._managed, a private module (managed memory). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import MAX_MANAGED_BYTES as MAX_MANAGED_BYTES, is_managed as is_managed, managed_empty as managed_empty
