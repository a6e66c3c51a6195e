# Type hints for streamblur._native, a private module (the compiled module, imported once) with no public names.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.
