# Type hints for streamblur._video, a private module (video files). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import process_video as process_video, process_videos as process_videos
