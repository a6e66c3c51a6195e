# Type hints for streamblur._checks, a private module (argument checks). Its public names
# are streamblur's too (streamblur.INT32_MAX, streamblur.INT64_MAX).
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

INT32_MAX: int
INT64_MAX: int
