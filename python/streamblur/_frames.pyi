# Type hints for streamblur._frames, a private module (frames()). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import Frame as Frame, FrameIterator as FrameIterator, frames as frames
