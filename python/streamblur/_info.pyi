# Type hints for streamblur._info, a private module (devices and filters). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import (
    cuda_available as cuda_available,
    device_count as device_count,
    filter_help as filter_help,
    filter_list as filter_list,
)
