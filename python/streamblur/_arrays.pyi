# Type hints for streamblur._arrays, a private module (arrays in and out of the extension) with no public names.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.
